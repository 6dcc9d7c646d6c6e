/**
 * The judged queries over registry.json, graded by what a practitioner means:
 * 2 the metric meant, 1 an acceptable related one (a regional or legacy
 * version of it, a close sibling); anything not listed is 0. Keys name the
 * metrics. Written before the ranking was tuned, and not changed to suit it.
 *
 * The last two kinds came later, with metrics of their own (the warehouse,
 * support and people metrics at the end of build-registry.ts), for names
 * that share the query's words. Phrase order: the metric meant holds the
 * query's words together, in the query's order, and another name holds them
 * apart, with as few other words or fewer ("dock time": Average Dock Time,
 * not Time to Dock). Coverage: several names hold every word of the query,
 * and the metric meant is the one with the fewest other words ("time dwell":
 * Dwell Time before Dwell Time at Cross-Dock), whether or not the others
 * start with the query.
 */
export type Kind =
  | 'exact name'
  | 'other case'
  | 'word order'
  | 'plural/stemming'
  | 'hyphenation'
  | 'key'
  | 'one-word partial'
  | 'typo'
  | 'two-word partial'
  | 'abbreviation'
  | 'question'
  | 'phrase order'
  | 'coverage';

export interface Judged {
  q: string;
  kind: Kind;
  grades: Record<string, 1 | 2>;
}

/** The metric meant (2), its regional and legacy versions (1), and any further keys given. */
const family = (key: string, regions: string[] = [], legacy = false, more: Record<string, 1 | 2> = {}) => ({
  [key]: 2 as const,
  ...Object.fromEntries(regions.map((r) => [`${key}_${r}`, 1 as const])),
  ...(legacy ? { [`${key}_legacy`]: 1 as const } : {}),
  ...more,
});

const NET_REVENUE = family('net_revenue', ['eu', 'na', 'apac'], true, { net_revenue_v2: 1 });
const AOV = family('average_order_value', ['eu', 'na', 'apac'], true);
const DAU = family('daily_active_users', ['eu', 'na', 'apac'], true);
const MAU = family('monthly_active_users', ['eu', 'na', 'apac'], true);
const CAC = family('cac', ['eu', 'na'], true, { paid_cac: 1 });
const CHURN = family('churn_rate', ['eu', 'na'], true, { revenue_churn_rate: 1 });
const GMV = family('gmv', ['eu', 'na', 'apac'], true);
const ARR = family('arr', ['eu', 'na', 'apac'], true);
const MRR = family('mrr', ['eu', 'na'], true);
const LTV = family('customer_lifetime_value', [], true);
const NRR = family('net_revenue_retention', [], true, { gross_revenue_retention: 1 });
const CONVERSION = family('conversion_rate', ['eu', 'na', 'apac'], true, { conversion_rate_v2: 1 });

export const QUERIES: Judged[] = [
  { q: 'Net Revenue', kind: 'exact name', grades: NET_REVENUE },
  { q: 'Average Order Value', kind: 'exact name', grades: AOV },
  { q: 'Daily Active Users', kind: 'exact name', grades: DAU },
  { q: 'Customer Acquisition Cost', kind: 'exact name', grades: CAC },
  { q: 'Churn Rate', kind: 'exact name', grades: CHURN },
  { q: 'Gross Merchandise Value', kind: 'exact name', grades: GMV },
  { q: 'Bookings', kind: 'exact name', grades: family('bookings', ['eu', 'na']) },

  { q: 'net revenue', kind: 'other case', grades: NET_REVENUE },
  { q: 'MONTHLY RECURRING REVENUE', kind: 'other case', grades: MRR },
  { q: 'cart abandonment rate', kind: 'other case', grades: { cart_abandonment_rate: 2 } },
  { q: 'gross MARGIN', kind: 'other case', grades: family('gross_margin', ['eu', 'na'], true) },
  { q: 'return on ad spend', kind: 'other case', grades: family('roas', ['eu', 'na']) },

  { q: 'revenue net', kind: 'word order', grades: NET_REVENUE },
  { q: 'users active daily', kind: 'word order', grades: DAU },
  { q: 'rate conversion', kind: 'word order', grades: CONVERSION },
  { q: 'value lifetime customer', kind: 'word order', grades: LTV },
  { q: 'rate churn revenue', kind: 'word order', grades: { revenue_churn_rate: 2, churn_rate: 1 } },
  { q: 'cost acquisition customer', kind: 'word order', grades: CAC },

  { q: 'daily active user', kind: 'plural/stemming', grades: DAU },
  {
    q: 'order',
    kind: 'plural/stemming',
    grades: family('order_count', ['eu', 'na'], false, { average_order_value: 1 }),
  },
  { q: 'refund rates', kind: 'plural/stemming', grades: family('refund_rate', [], true) },
  { q: 'marketing qualified lead', kind: 'plural/stemming', grades: family('mql_count', [], true) },
  { q: 'paying customer', kind: 'plural/stemming', grades: family('paying_customers', [], true) },
  { q: 'support tickets volume', kind: 'plural/stemming', grades: { support_ticket_volume: 2 } },

  { q: 'add to cart rate', kind: 'hyphenation', grades: { add_to_cart_rate: 2 } },
  { q: 'signups', kind: 'hyphenation', grades: family('signups', [], true) },
  { q: 'click through rate', kind: 'hyphenation', grades: { ctr: 2 } },
  { q: 'on-time delivery', kind: 'hyphenation', grades: family('otd_rate', ['eu', 'na']) },
  { q: 'out of stock rate', kind: 'hyphenation', grades: { stockout_rate: 2 } },
  { q: 'sell through', kind: 'hyphenation', grades: { sell_through_rate: 2 } },

  { q: 'net_revenue', kind: 'key', grades: NET_REVENUE },
  { q: 'arr', kind: 'key', grades: ARR },
  { q: 'cac', kind: 'key', grades: CAC },
  { q: 'average_order_value', kind: 'key', grades: AOV },
  { q: 'dau_mau_ratio', kind: 'key', grades: { dau_mau_ratio: 2 } },
  { q: 'cpl', kind: 'key', grades: { cpl: 2 } },
  { q: 'otd_rate', kind: 'key', grades: family('otd_rate', ['eu', 'na']) },

  { q: 'churn', kind: 'one-word partial', grades: { ...CHURN, revenue_churn_rate: 2, churned_arr: 1 } },
  {
    q: 'retention',
    kind: 'one-word partial',
    grades: {
      customer_retention_rate: 2,
      net_revenue_retention: 2,
      gross_revenue_retention: 2,
      net_revenue_retention_legacy: 1,
    },
  },
  {
    q: 'margin',
    kind: 'one-word partial',
    grades: {
      gross_margin: 2,
      contribution_margin: 2,
      adjusted_ebitda_margin: 1,
      gross_margin_eu: 1,
      gross_margin_na: 1,
      gross_margin_legacy: 1,
    },
  },
  { q: 'stickiness', kind: 'one-word partial', grades: { dau_mau_ratio: 2 } },
  { q: 'uptime', kind: 'one-word partial', grades: { service_uptime_pct: 2 } },
  { q: 'pipeline', kind: 'one-word partial', grades: { sales_pipeline_value: 2 } },
  {
    q: 'conversion',
    kind: 'one-word partial',
    grades: {
      ...CONVERSION,
      checkout_conversion_rate: 1,
      trial_to_paid_conversion_rate: 1,
      lead_to_opportunity_rate: 1,
    },
  },

  { q: 'convertion rate', kind: 'typo', grades: CONVERSION },
  { q: 'montly active users', kind: 'typo', grades: MAU },
  { q: 'revnue churn', kind: 'typo', grades: { revenue_churn_rate: 2, churn_rate: 1 } },
  { q: 'cart abandonmnet', kind: 'typo', grades: { cart_abandonment_rate: 2 } },
  { q: 'gross marign', kind: 'typo', grades: family('gross_margin', ['eu', 'na'], true) },
  { q: 'custmer lifetime value', kind: 'typo', grades: LTV },

  { q: 'recurring revenue', kind: 'two-word partial', grades: { ...ARR, ...MRR, arr: 2, mrr: 2 } },
  { q: 'order value', kind: 'two-word partial', grades: AOV },
  { q: 'active users', kind: 'two-word partial', grades: { ...DAU, ...MAU, weekly_active_users: 2 } },
  { q: 'acquisition cost', kind: 'two-word partial', grades: CAC },
  { q: 'lifetime value', kind: 'two-word partial', grades: LTV },
  { q: 'contract value', kind: 'two-word partial', grades: { acv: 2, tcv: 2 } },
  { q: 'payback period', kind: 'two-word partial', grades: { cac_payback_period: 2 } },

  { q: 'NRR', kind: 'abbreviation', grades: NRR },
  { q: 'DAU', kind: 'abbreviation', grades: { ...DAU, dau_mau_ratio: 1 } },
  { q: 'CAC', kind: 'abbreviation', grades: CAC },
  { q: 'LTV', kind: 'abbreviation', grades: { ...LTV, ltv_cac_ratio: 1 } },
  { q: 'AOV', kind: 'abbreviation', grades: AOV },
  { q: 'MTTR', kind: 'abbreviation', grades: { mean_time_to_resolution: 2 } },
  { q: 'NDR', kind: 'abbreviation', grades: NRR },
  { q: 'ARPU', kind: 'abbreviation', grades: family('arpu', [], true) },
  { q: 'GRR', kind: 'abbreviation', grades: { gross_revenue_retention: 2, net_revenue_retention: 1 } },

  { q: 'cost of winning a new customer', kind: 'question', grades: CAC },
  { q: 'how many people use the product every day', kind: 'question', grades: DAU },
  { q: 'what share of customers cancel', kind: 'question', grades: CHURN },
  { q: 'how much is a customer worth over the whole relationship', kind: 'question', grades: LTV },
  { q: 'money given back in refunds', kind: 'question', grades: family('refund_rate', [], true) },
  {
    q: 'how fast do agents reply to support tickets',
    kind: 'question',
    grades: { first_response_time_hours: 2, first_response_time_hours_legacy: 1, mean_time_to_resolution: 1 },
  },
  { q: 'share of sessions that end in an order', kind: 'question', grades: CONVERSION },
  { q: 'revenue kept from existing customers including expansion', kind: 'question', grades: NRR },
  { q: 'months to recover acquisition cost', kind: 'question', grades: { cac_payback_period: 2 } },
  { q: 'items customers send back', kind: 'question', grades: { product_return_rate: 2 } },

  { q: 'dock time', kind: 'phrase order', grades: { avg_dock_time_minutes: 2 } },
  { q: 'pick time', kind: 'phrase order', grades: { avg_pick_time_seconds: 2 } },
  { q: 'labor cost', kind: 'phrase order', grades: { warehouse_labor_cost: 2, contract_labor_cost: 1 } },
  {
    q: 'employee turnover',
    kind: 'phrase order',
    grades: family('annual_employee_turnover', ['eu', 'na']),
  },
  { q: 'ticket backlog', kind: 'phrase order', grades: { open_ticket_backlog: 2, backlog_tickets_closed: 1 } },
  { q: 'review score', kind: 'phrase order', grades: { avg_review_score: 2 } },
  { q: 'cart value', kind: 'phrase order', grades: { avg_cart_value: 2, abandoned_cart_value: 1 } },

  {
    q: 'time dwell',
    kind: 'coverage',
    grades: family('dwell_time_hours', ['eu', 'na'], true, { trailer_dwell_time: 1, cross_dock_dwell_time: 1 }),
  },
  { q: 'rate scrap', kind: 'coverage', grades: family('scrap_rate', [], true, { scrap_rate_by_line: 1 }) },
  { q: 'scrap', kind: 'coverage', grades: family('scrap_rate', [], true, { scrap_rate_by_line: 1 }) },
  {
    q: 'hire time',
    kind: 'coverage',
    grades: { time_to_hire_days: 2, time_to_hire_days_v2: 1, time_to_hire_engineering_days: 1 },
  },
  {
    q: 'putaway time',
    kind: 'coverage',
    grades: { avg_putaway_time_minutes: 2, putaway_time_by_location: 1 },
  },
  { q: 'share overtime', kind: 'coverage', grades: { overtime_share: 2, warehouse_overtime_share: 1 } },
  {
    q: 'dwell',
    kind: 'coverage',
    grades: family('dwell_time_hours', ['eu', 'na'], true, { trailer_dwell_time: 1, cross_dock_dwell_time: 1 }),
  },
];
