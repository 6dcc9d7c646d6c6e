/**
 * Writes test/relevance/registry.json, the judged set's registry (the fixture
 * format), from the compact list below: each base metric with its regional
 * variants (`variant_of` the base), its deprecated legacy version (superseded
 * by the base) and its draft successor. Ids are derived from positions, so the
 * file is the same on every run: `npx tsx test/relevance/build-registry.ts`.
 */
import { writeFileSync } from 'node:fs';

type Status = 'DRAFT' | 'VALIDATED' | 'CANDIDATE' | 'APPROVED' | 'RELEASED' | 'DEPRECATED';
interface Base {
  key: string;
  name: string;
  description: string;
  concept: string;
  tags: string[];
  aliases?: string[];
  regions?: string[];
  legacy?: string;
  draft?: string;
  status?: Status;
}

const b = (
  key: string,
  name: string,
  concept: string,
  tags: string[],
  description: string,
  more: Partial<Base> = {},
): Base => ({ key, name, concept, tags, description, ...more });

const SAAS = ['saas'];
const SHOP = ['ecommerce'];
const BASES: Base[] = [
  b(
    'arr',
    'Annual Recurring Revenue',
    'recurring_revenue',
    ['finance', ...SAAS],
    'Annualized value of all active subscription contracts at the end of the period, converted to USD at the plan rate.',
    {
      regions: ['EU', 'NA', 'APAC'],
      legacy: 'Counted booked contracts including one-off services fees; ARR before the 2025 revenue policy.',
    },
  ),
  b(
    'mrr',
    'Monthly Recurring Revenue',
    'recurring_revenue',
    ['finance', ...SAAS],
    'Normalized monthly value of active subscriptions on the last day of the month.',
    {
      regions: ['EU', 'NA'],
      legacy: 'Monthly recurring revenue from the billing system, before discounts were netted.',
    },
  ),
  b(
    'net_new_arr',
    'Net New ARR',
    'arr_movement',
    ['finance', ...SAAS],
    'New ARR plus expansion ARR minus contraction ARR and churned ARR: the net change in ARR over the period.',
  ),
  b(
    'new_business_arr',
    'New Business ARR',
    'arr_movement',
    ['sales', ...SAAS],
    'ARR of contracts signed with new customers in the period.',
  ),
  b(
    'expansion_arr',
    'Expansion ARR',
    'arr_movement',
    ['sales', ...SAAS],
    'ARR added by upsell and cross-sell to existing customers.',
  ),
  b(
    'contraction_arr',
    'Contraction ARR',
    'arr_movement',
    ['finance', ...SAAS],
    'ARR lost to downgrades of existing customers who stay.',
  ),
  b(
    'churned_arr',
    'Churned ARR',
    'arr_movement',
    ['finance', ...SAAS],
    'ARR lost when customers cancel or do not renew.',
  ),
  b(
    'net_revenue_retention',
    'Net Revenue Retention',
    'retention',
    ['finance', ...SAAS],
    'Recurring revenue today from the customers of twelve months ago, including expansion, contraction and churn, as a share of their recurring revenue then.',
    {
      aliases: ['NDR', 'net dollar retention'],
      legacy: 'Net retention computed on bookings, not on recurring revenue.',
    },
  ),
  b(
    'gross_revenue_retention',
    'Gross Revenue Retention',
    'retention',
    ['finance', ...SAAS],
    'Recurring revenue kept from the customers of twelve months ago, counting contraction and churn but not expansion.',
    { aliases: ['GDR'] },
  ),
  b(
    'churn_rate',
    'Churn Rate',
    'churn',
    ['customer', ...SAAS],
    'Share of customers active at the start of the period who cancelled during it.',
    {
      aliases: ['logo churn', 'customer churn'],
      regions: ['EU', 'NA'],
      legacy:
        'Churn rate on accounts instead of customers; churned accounts over accounts at period end. Churn counted including trial churn.',
    },
  ),
  b(
    'revenue_churn_rate',
    'Revenue Churn Rate',
    'churn',
    ['finance', ...SAAS],
    'Recurring revenue lost to cancellations and downgrades as a share of recurring revenue at the start of the period.',
  ),
  b(
    'cac',
    'Customer Acquisition Cost',
    'acquisition_cost',
    ['marketing', 'sales'],
    'Sales and marketing spend divided by the number of new customers won in the period.',
    { regions: ['EU', 'NA'], legacy: 'Marketing spend only, divided by new customers.' },
  ),
  b(
    'cac_payback_period',
    'CAC Payback Period',
    'acquisition_cost',
    ['finance', 'sales'],
    'Months of gross margin needed to recover the CAC of a new customer; CAC divided by monthly gross margin per customer.',
  ),
  b(
    'paid_cac',
    'Paid Channel CAC',
    'acquisition_cost',
    ['marketing'],
    'Paid media spend divided by the new customers attributed to paid channels; CAC of paid acquisition.',
  ),
  b(
    'customer_lifetime_value',
    'Customer Lifetime Value',
    'lifetime_value',
    ['finance', 'customer'],
    'Expected gross margin from a customer over the whole relationship: average margin per month divided by the monthly churn rate.',
    { aliases: ['LTV', 'CLV', 'CLTV'], legacy: 'Lifetime value from revenue instead of margin.' },
  ),
  b(
    'ltv_cac_ratio',
    'LTV to CAC Ratio',
    'unit_economics',
    ['finance'],
    'Customer lifetime value divided by customer acquisition cost.',
  ),
  b(
    'arpu',
    'Average Revenue per User',
    'monetization',
    ['finance', ...SAAS],
    'Recurring revenue divided by the number of active users in the period.',
    { legacy: 'Revenue per registered user, not per active user.' },
  ),
  b(
    'arpa',
    'Average Revenue per Account',
    'monetization',
    ['finance', ...SAAS],
    'Recurring revenue divided by the number of paying accounts.',
  ),
  b(
    'daily_active_users',
    'Daily Active Users',
    'engagement',
    ['product'],
    'Unique users who performed at least one qualifying action in the product on a given day.',
    { regions: ['EU', 'NA', 'APAC'], legacy: 'Unique logins per day, counted before the qualifying-action rule.' },
  ),
  b(
    'weekly_active_users',
    'Weekly Active Users',
    'engagement',
    ['product'],
    'Unique users with a qualifying action in the product during a calendar week.',
    { regions: ['EU', 'NA'] },
  ),
  b(
    'monthly_active_users',
    'Monthly Active Users',
    'engagement',
    ['product'],
    'Unique users with a qualifying action in the product during a calendar month.',
    { regions: ['EU', 'NA', 'APAC'], legacy: 'Monthly unique logins.' },
  ),
  b(
    'dau_mau_ratio',
    'Stickiness (DAU/MAU)',
    'engagement',
    ['product'],
    'Daily active users divided by monthly active users: how often monthly users come back.',
  ),
  b(
    'trial_to_paid_conversion_rate',
    'Trial to Paid Conversion Rate',
    'conversion',
    ['growth', ...SAAS],
    'Share of free trials started in the period that became paid subscriptions within 30 days.',
  ),
  b(
    'activation_rate',
    'Activation Rate',
    'activation',
    ['product', 'growth'],
    'Share of new sign-ups who reach the activation milestone within 7 days.',
  ),
  b(
    'signups',
    'Sign-ups',
    'acquisition',
    ['growth'],
    'New accounts registered in the period, excluding test and internal accounts.',
    { legacy: 'Registrations including internal accounts.' },
  ),
  b(
    'nps',
    'Net Promoter Score',
    'satisfaction',
    ['customer'],
    'Percentage of promoters minus percentage of detractors among survey responses.',
  ),
  b(
    'csat_score',
    'Customer Satisfaction Score',
    'satisfaction',
    ['customer', 'support'],
    'Share of support survey answers rating 4 or 5 out of 5.',
    { aliases: ['CSAT'] },
  ),
  b(
    'seat_utilization_rate',
    'Seat Utilization Rate',
    'usage',
    ['product', ...SAAS],
    'Seats with activity in the last 30 days divided by seats purchased.',
  ),
  b(
    'feature_adoption_rate',
    'Feature Adoption Rate',
    'usage',
    ['product'],
    'Share of active accounts that used a given feature in the period.',
  ),
  b(
    'time_to_value_days',
    'Time to Value',
    'activation',
    ['product'],
    'Median days from sign-up to the first value milestone.',
  ),
  b(
    'support_ticket_volume',
    'Support Ticket Volume',
    'support',
    ['support'],
    'Number of support tickets opened in the period, all channels.',
  ),
  b(
    'first_response_time_hours',
    'First Response Time',
    'support',
    ['support'],
    'Median business hours between a ticket being opened and the first reply from an agent.',
    { legacy: 'Mean response time in calendar hours.' },
  ),
  b(
    'mean_time_to_resolution',
    'Mean Time to Resolution',
    'support',
    ['support', 'engineering'],
    'Mean hours from a ticket or incident being opened to it being resolved.',
  ),
  b(
    'service_uptime_pct',
    'Service Uptime',
    'reliability',
    ['engineering'],
    'Share of minutes in the period in which the production service was available.',
  ),
  b(
    'sales_pipeline_value',
    'Sales Pipeline Value',
    'pipeline',
    ['sales'],
    'Total amount of open opportunities expected to close in the next two quarters.',
  ),
  b(
    'opportunity_win_rate',
    'Win Rate',
    'pipeline',
    ['sales'],
    'Closed-won opportunities divided by all closed opportunities.',
  ),
  b(
    'sales_cycle_length_days',
    'Sales Cycle Length',
    'pipeline',
    ['sales'],
    'Median days from opportunity creation to closed-won.',
  ),
  b(
    'quota_attainment',
    'Quota Attainment',
    'sales_performance',
    ['sales'],
    'Bookings of a rep divided by their quota.',
  ),
  b(
    'bookings',
    'Bookings',
    'bookings',
    ['sales', 'finance'],
    'Total value of contracts signed in the period, first year only.',
    { regions: ['EU', 'NA'] },
  ),
  b(
    'acv',
    'Average Contract Value',
    'contract_value',
    ['sales'],
    'Average annualized value of contracts signed in the period.',
  ),
  b(
    'tcv',
    'Total Contract Value',
    'contract_value',
    ['sales'],
    'Full value of a contract over its whole term, including one-off fees.',
  ),
  b(
    'deferred_revenue',
    'Deferred Revenue',
    'revenue_recognition',
    ['finance'],
    'Billed amounts not yet recognized as revenue.',
  ),
  b(
    'gross_margin',
    'Gross Margin',
    'profitability',
    ['finance'],
    'Revenue minus cost of goods sold, as a share of revenue.',
    { regions: ['EU', 'NA'], legacy: 'Gross margin before hosting costs were moved to cost of goods sold.' },
  ),
  b('burn_multiple', 'Burn Multiple', 'efficiency', ['finance'], 'Net cash burned divided by net new ARR.'),
  b(
    'opex',
    'Operating Expenses',
    'expenses',
    ['finance'],
    'Total operating costs: sales, marketing, research and development, general and administrative.',
  ),
  b(
    'adjusted_ebitda_margin',
    'Adjusted EBITDA Margin',
    'profitability',
    ['finance'],
    'Earnings before interest, taxes, depreciation and amortization, adjusted for one-off items, as a share of revenue.',
  ),
  b(
    'rule_of_40',
    'Rule of 40',
    'efficiency',
    ['finance', ...SAAS],
    'Revenue growth rate plus profit margin; healthy when at least 40%.',
  ),
  b(
    'sales_efficiency',
    'Sales Efficiency (Magic Number)',
    'efficiency',
    ['sales', 'finance'],
    'Net new ARR of the quarter divided by sales and marketing spend of the previous quarter.',
  ),
  b(
    'mql_count',
    'Marketing Qualified Leads',
    'leads',
    ['marketing'],
    'Leads that reached the marketing qualification score in the period.',
    { legacy: 'Leads scored by the old form-fill rules.' },
  ),
  b(
    'sql_count',
    'Sales Qualified Leads',
    'leads',
    ['sales', 'marketing'],
    'Leads accepted by sales as worth pursuing.',
  ),
  b(
    'lead_to_opportunity_rate',
    'Lead to Opportunity Conversion Rate',
    'conversion',
    ['marketing', 'sales'],
    'Share of qualified leads that became opportunities within 90 days.',
  ),
  b('cpl', 'Cost per Lead', 'marketing_cost', ['marketing'], 'Marketing spend divided by the number of new leads.'),
  b('roas', 'Return on Ad Spend', 'marketing_cost', ['marketing'], 'Revenue attributed to ads divided by ad spend.', {
    regions: ['EU', 'NA'],
  }),
  b(
    'paid_media_spend',
    'Paid Media Spend',
    'marketing_cost',
    ['marketing'],
    'Spend on paid search, social and display advertising.',
  ),
  b('ctr', 'Click-Through Rate', 'ad_performance', ['marketing'], 'Clicks divided by impressions of ads and emails.'),
  b('cpc', 'Cost per Click', 'ad_performance', ['marketing'], 'Ad spend divided by ad clicks.'),
  b(
    'email_open_rate',
    'Email Open Rate',
    'email',
    ['marketing'],
    'Unique opens divided by delivered marketing emails.',
  ),
  b(
    'gmv',
    'Gross Merchandise Value',
    'gmv',
    ['finance', ...SHOP],
    'Total value of orders placed on the storefront before refunds, discounts and cancellations, converted to USD.',
    { regions: ['EU', 'NA', 'APAC'], legacy: 'GMV including shipping fees and taxes.' },
  ),
  b(
    'net_revenue',
    'Net Revenue',
    'revenue',
    ['finance', ...SHOP],
    'Gross revenue minus refunds, discounts and cancellations, converted to USD at the daily rate.',
    {
      regions: ['EU', 'NA', 'APAC'],
      legacy: 'Net revenue before marketplace fees were netted; revenue converted at month-end rates.',
      draft: 'Net revenue with marketplace commissions recognized as revenue.',
    },
  ),
  b(
    'gross_revenue',
    'Gross Revenue',
    'revenue',
    ['finance', ...SHOP],
    'Revenue from all orders shipped in the period before refunds and discounts, converted to USD.',
    { regions: ['EU', 'NA'] },
  ),
  b(
    'average_order_value',
    'Average Order Value',
    'order_value',
    ['sales', ...SHOP],
    'Net revenue divided by the number of orders.',
    {
      aliases: ['AOV', 'basket size'],
      regions: ['EU', 'NA', 'APAC'],
      legacy: 'Average order value on gross revenue; order value including shipping and tax.',
    },
  ),
  b(
    'order_count',
    'Orders',
    'orders',
    ['operations', ...SHOP],
    'Number of orders placed and not cancelled within 24 hours.',
    { regions: ['EU', 'NA'] },
  ),
  b(
    'conversion_rate',
    'Conversion Rate',
    'conversion',
    ['growth', ...SHOP],
    'Sessions with an order divided by all sessions on the storefront.',
    {
      regions: ['EU', 'NA', 'APAC'],
      legacy: 'Orders divided by unique visitors.',
      draft: 'Conversion rate excluding bot sessions.',
    },
  ),
  b(
    'add_to_cart_rate',
    'Add-to-Cart Rate',
    'funnel',
    ['growth', ...SHOP],
    'Sessions in which a product was added to the cart divided by all sessions.',
  ),
  b(
    'cart_abandonment_rate',
    'Cart Abandonment Rate',
    'funnel',
    ['growth', ...SHOP],
    'Carts created but not checked out within 24 hours, as a share of all carts.',
  ),
  b(
    'checkout_conversion_rate',
    'Checkout Conversion Rate',
    'funnel',
    ['growth', ...SHOP],
    'Checkouts started that ended in a paid order.',
  ),
  b('refund_rate', 'Refund Rate', 'refunds', ['finance', ...SHOP], 'Refunded amount as a share of gross revenue.', {
    legacy: 'Refunded orders as a share of orders.',
  }),
  b(
    'product_return_rate',
    'Product Return Rate',
    'returns',
    ['operations', ...SHOP],
    'Items sent back by customers as a share of items shipped.',
  ),
  b(
    'repeat_purchase_rate',
    'Repeat Purchase Rate',
    'loyalty',
    ['customer', ...SHOP],
    'Share of customers with more than one order in the last 12 months.',
  ),
  b(
    'customer_retention_rate',
    'Customer Retention Rate',
    'retention',
    ['customer'],
    'Share of customers at the start of the period still active at its end, excluding new customers.',
  ),
  b(
    'website_sessions',
    'Website Sessions',
    'traffic',
    ['growth', ...SHOP],
    'Visits to the storefront, 30 minutes of inactivity ending a session.',
  ),
  b(
    'bounce_rate',
    'Bounce Rate',
    'traffic',
    ['growth'],
    'Sessions with a single page view as a share of all sessions.',
  ),
  b('upt', 'Units per Transaction', 'basket', ['sales', ...SHOP], 'Average number of items per order.'),
  b(
    'inventory_turnover',
    'Inventory Turnover',
    'inventory',
    ['operations', ...SHOP],
    'Cost of goods sold divided by average inventory value.',
  ),
  b(
    'sell_through_rate',
    'Sell-Through Rate',
    'inventory',
    ['operations', ...SHOP],
    'Units sold divided by units received from suppliers.',
  ),
  b(
    'stockout_rate',
    'Out-of-Stock Rate',
    'inventory',
    ['operations', ...SHOP],
    'Share of product page views where the product could not be bought.',
  ),
  b(
    'otd_rate',
    'On-Time Delivery Rate',
    'delivery',
    ['operations', ...SHOP],
    'Orders delivered by the promised date, as a share of delivered orders.',
    { regions: ['EU', 'NA'] },
  ),
  b(
    'fulfillment_cost_per_order',
    'Fulfillment Cost per Order',
    'fulfillment',
    ['operations', ...SHOP],
    'Warehouse picking, packing and handling costs divided by orders shipped.',
  ),
  b(
    'shipping_cost_per_order',
    'Shipping Cost per Order',
    'fulfillment',
    ['operations', ...SHOP],
    'Carrier costs divided by orders shipped.',
  ),
  b(
    'average_discount_rate',
    'Average Discount Rate',
    'pricing',
    ['sales', ...SHOP],
    'Discounts given as a share of list price revenue.',
  ),
  b(
    'coupon_redemption_rate',
    'Coupon Redemption Rate',
    'pricing',
    ['marketing', ...SHOP],
    'Coupons used divided by coupons issued.',
  ),
  b(
    'rpv',
    'Revenue per Visitor',
    'monetization',
    ['growth', ...SHOP],
    'Net revenue divided by unique storefront visitors.',
  ),
  b(
    'new_customers',
    'New Customers',
    'customers',
    ['customer'],
    'Customers who placed a first order or started a first subscription in the period.',
    { regions: ['EU', 'NA'] },
  ),
  b(
    'active_customers',
    'Active Customers',
    'customers',
    ['customer'],
    'Customers with at least one order in the last 12 months.',
  ),
  b(
    'paying_customers',
    'Paying Customers',
    'customers',
    ['customer', ...SAAS],
    'Accounts with an active paid subscription at period end.',
    { legacy: 'Customers counted by billing contact instead of account.' },
  ),
  b(
    'payment_failure_rate',
    'Payment Failure Rate',
    'payments',
    ['finance', ...SHOP],
    'Failed payment attempts divided by all payment attempts.',
  ),
  b(
    'chargeback_rate',
    'Chargeback Rate',
    'payments',
    ['finance', ...SHOP],
    'Disputed card payments as a share of card payments.',
  ),
  b(
    'contribution_margin',
    'Contribution Margin',
    'profitability',
    ['finance', ...SHOP],
    'Revenue minus variable costs (cost of goods, shipping, payment fees), as a share of revenue.',
  ),
  b('cogs', 'Cost of Goods Sold', 'costs', ['finance', ...SHOP], 'Direct cost of the products sold in the period.'),

  // Warehouse, support and people metrics whose names share their words: the phrase order and
  // coverage kinds of queries.ts. Added after the rest, so the ids above stay as they were.
  b(
    'avg_dock_time_minutes',
    'Average Dock Time',
    'dock_operations',
    ['operations', 'warehouse'],
    'Minutes a truck spends at a dock door, from docking until it pulls away loaded or empty.',
  ),
  b(
    'time_to_dock_minutes',
    'Time to Dock',
    'yard_operations',
    ['operations', 'warehouse'],
    'Minutes from a truck checking in at the gate until it is assigned a door and docked; yard congestion.',
  ),
  b(
    'avg_pick_time_seconds',
    'Average Pick Time',
    'picking',
    ['operations', 'warehouse'],
    'Seconds a picker needs to pick one order line, walking included.',
  ),
  b(
    'time_to_pick_hours',
    'Time to Pick',
    'picking',
    ['operations', 'warehouse'],
    'Hours from an order being released to the warehouse until its first line is picked.',
  ),
  b(
    'warehouse_labor_cost',
    'Warehouse Labor Cost',
    'labor',
    ['operations', 'warehouse', 'finance'],
    'Wages, benefits and agency fees of warehouse staff in the period.',
  ),
  b(
    'contract_labor_cost',
    'Cost of Contract Labor',
    'labor',
    ['operations', 'finance'],
    'Spend on temporary workers from staffing agencies, all sites, as a share of total labor cost.',
  ),
  b(
    'annual_employee_turnover',
    'Annual Employee Turnover',
    'attrition',
    ['hr'],
    'Employees who left in the last twelve months as a share of average headcount.',
    { regions: ['EU', 'NA'] },
  ),
  b(
    'turnover_per_employee',
    'Turnover per Employee',
    'productivity',
    ['finance', 'hr'],
    'Net sales (turnover) of the last twelve months divided by the average number of full-time employees.',
  ),
  b(
    'open_ticket_backlog',
    'Open Ticket Backlog',
    'support',
    ['support'],
    'Support tickets open and unresolved at the end of the day.',
  ),
  b(
    'backlog_tickets_closed',
    'Tickets Closed from Backlog',
    'support',
    ['support'],
    'Tickets older than seven days that were closed in the period: how fast the support backlog is worked off.',
  ),
  b(
    'avg_review_score',
    'Average Review Score',
    'reviews',
    ['customer', ...SHOP],
    'Mean star rating, 1 to 5, of the product reviews published in the period.',
  ),
  b(
    'review_response_score',
    'Review Response Score',
    'reviews',
    ['support', ...SHOP],
    'Share of negative reviews answered by support within 48 hours, scored from 0 to 100.',
  ),
  b(
    'avg_cart_value',
    'Average Cart Value',
    'basket',
    ['growth', ...SHOP],
    'Mean value of the items in a cart when checkout starts, whether or not the order is placed.',
  ),
  b(
    'abandoned_cart_value',
    'Value of Abandoned Carts',
    'basket',
    ['growth', ...SHOP],
    'Total value of the carts left without an order in the period; the revenue cart recovery emails go after.',
  ),
  b(
    'dwell_time_hours',
    'Dwell Time',
    'yard_operations',
    ['operations', 'warehouse'],
    'Hours a trailer stays on site, from the gate check-in to the gate check-out, averaged over the trailers that left in the period; visits under 15 minutes (parcel drop-offs) are left out.',
    { regions: ['EU', 'NA'], legacy: 'Dwell time from dock assignment, not from gate in.' },
  ),
  b(
    'cross_dock_dwell_time',
    'Dwell Time at Cross-Dock',
    'yard_operations',
    ['operations', 'warehouse'],
    'Hours goods wait at a cross-dock.',
  ),
  b(
    'trailer_dwell_time',
    'Trailer Dwell Time',
    'yard_operations',
    ['operations', 'warehouse'],
    'Hours an empty trailer waits in the yard before it is loaded again.',
  ),
  b(
    'scrap_rate',
    'Scrap Rate',
    'quality',
    ['operations'],
    'Units scrapped at any step of production, as a share of the units started in the period; rework that ends in a sellable unit is not scrap.',
    {
      legacy: 'Scrap rate by weight instead of units.',
    },
  ),
  b('scrap_rate_by_line', 'Scrap Rate by Production Line', 'quality', ['operations'], 'Scrapped share of each line.'),
  b(
    'time_to_hire_days',
    'Time to Hire',
    'recruiting',
    ['hr'],
    'Median calendar days from a job opening being posted to the candidate accepting the offer, over the openings filled in the period; internal transfers left out.',
    { draft: 'Days from the first contact with a candidate to the offer being accepted.' },
  ),
  b(
    'time_to_hire_engineering_days',
    'Time to Hire for Engineering Roles',
    'recruiting',
    ['hr', 'engineering'],
    'Median days to hire an engineer.',
  ),
  b(
    'avg_putaway_time_minutes',
    'Average Putaway Time',
    'receiving',
    ['operations', 'warehouse'],
    'Minutes from goods being received at the dock to their being stored in a pick location.',
  ),
  b(
    'putaway_time_by_location',
    'Putaway Time per Pallet Location',
    'receiving',
    ['operations', 'warehouse'],
    'Minutes of putaway time for each pallet location type (floor, rack, mezzanine).',
  ),
  b(
    'overtime_share',
    'Overtime Share',
    'labor',
    ['operations', 'hr'],
    'Overtime hours paid as a share of all hours worked by hourly staff in the period, every site and department included.',
  ),
  b(
    'warehouse_overtime_share',
    'Overtime Share of Warehouse Hours',
    'labor',
    ['operations', 'warehouse'],
    'Warehouse overtime over hours.',
  ),
];

const ORG = '00000000-0000-4000-8000-000000000001';
const PROJECT = '00000000-0000-4000-8000-000000000002';
let n = 100;
const id = () => `00000000-0000-4000-8000-${(n++).toString(16).padStart(12, '0')}`;
const REGION_NAMES: Record<string, string> = { EU: 'Europe', NA: 'North America', APAC: 'Asia-Pacific' };
const T0 = '2026-01-01T00:00:00Z';

function metric(key: string, name: string, description: string, base: Base, more: Record<string, unknown> = {}) {
  return {
    id: id(),
    project_id: PROJECT,
    key,
    name,
    description,
    metric_type: 'base',
    lifecycle_status: base.status ?? 'RELEASED',
    definition_version: '1.0.0',
    policy_tier: 'tier_1',
    owner_team: 'Analytics',
    scope: 'enterprise_canonical',
    tags: base.tags,
    concept_name: base.concept,
    template_name: 'count_or_sum',
    sql_expression: 'SUM(value)',
    grains: ['day', 'month'],
    default_grain: 'month',
    created_at: T0,
    updated_at: T0,
    ...more,
  };
}

const metrics: ReturnType<typeof metric>[] = [];
for (const base of BASES) {
  const main = metric(base.key, base.name, base.description, base, { aliases: base.aliases ?? [] });
  const relationships: { kind: string; target_metric_id: string }[] = [];
  metrics.push({ ...main, relationships } as typeof main);
  for (const region of base.regions ?? []) {
    metrics.push(
      metric(
        `${base.key}_${region.toLowerCase()}`,
        `${base.name} (${region})`,
        `${base.name} for ${REGION_NAMES[region]} only: ${base.description.charAt(0).toLowerCase()}${base.description.slice(1)}`,
        base,
        {
          lifecycle_status: 'APPROVED',
          scope: 'domain_canonical',
          relationships: [{ kind: 'variant_of', target_metric_id: main.id }],
        },
      ),
    );
  }
  if (base.legacy) {
    const legacy = metric(`${base.key}_legacy`, `${base.name} (legacy)`, `Deprecated. ${base.legacy}`, base, {
      lifecycle_status: 'DEPRECATED',
      definition_version: '0.9.0',
    });
    metrics.push(legacy);
    relationships.push({ kind: 'supersedes', target_metric_id: legacy.id });
  }
  if (base.draft) {
    metrics.push(
      metric(`${base.key}_v2`, `${base.name} v2`, `Proposed. ${base.draft}`, base, {
        lifecycle_status: 'DRAFT',
        definition_version: '2.0.0-draft',
        scope: 'exploratory',
      }),
    );
  }
}

const fixture = {
  organizations: [
    {
      id: ORG,
      name: 'Shopwise',
      slug: 'shopwise',
      plan: 'team',
      users: [],
      projects: [{ id: PROJECT, name: 'Metrics' }],
      domains: [],
      api_keys: [
        {
          id: '00000000-0000-4000-8000-000000000003',
          name: 'relevance',
          secret: `cl_${'0'.repeat(39)}1`,
          scopes: ['metrics:read'],
          rate_limit_per_minute: 100000,
        },
      ],
      metrics,
    },
  ],
};
writeFileSync(new URL('./registry.json', import.meta.url), `${JSON.stringify(fixture, null, 1)}\n`);
console.log(`${metrics.length} metrics`);
