/**
 * The query builder of the read path: Kysely over the table types that
 * `prisma generate` writes from prisma/schema.prisma (prisma-kysely, field
 * names as in the models). It only builds and compiles; the statements run
 * through the SQL reader (src/db/sql.ts), which prepares them on PostgreSQL.
 *
 * Model fields are camelCase and columns their snake_case (the schema keeps
 * it so): Kysely's CamelCasePlugin writes the columns, and {@link FieldAliasPlugin}
 * names each selected column back after its field (`"m"."org_id" AS "orgId"`),
 * so rows come from PostgreSQL keyed as Kysely types them, and nothing renames
 * keys per row. (The plugin's own result mapping would also rename the keys
 * inside JSON values, and runs only when Kysely executes.)
 */
import {
  AliasNode,
  CamelCasePlugin,
  type Compilable,
  DummyDriver,
  IdentifierNode,
  Kysely,
  type KyselyPlugin,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type RawBuilder,
  ReferenceNode,
  type RootOperationNode,
  SelectionNode,
  type UnknownRow,
} from 'kysely';
import type * as KyselyEnums from '../generated/kysely/enums.js';
import type { DB } from '../generated/kysely/types.js';
import type * as PrismaEnums from '../generated/prisma/enums.js';

/** A statement as the SQL reader runs it; `R` is the row it returns (a phantom: never set). */
export interface Statement<R> {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  readonly row?: R;
}

/** The CamelCasePlugin, with its mapping from a column back to its field name in reach. */
class FieldCasePlugin extends CamelCasePlugin {
  fieldOf(column: string): string {
    return this.camelCase(column);
  }
}

const camelCase = new FieldCasePlugin();

class SelectionAliases extends OperationNodeTransformer {
  protected override transformSelection(node: SelectionNode): SelectionNode {
    const selection = super.transformSelection(node);
    const item = selection.selection;
    if (AliasNode.is(item) && IdentifierNode.is(item.alias)) {
      const alias = camelCase.fieldOf(item.alias.name);
      return alias === item.alias.name
        ? selection
        : SelectionNode.create(AliasNode.create(item.node, IdentifierNode.create(alias)));
    }
    const column = ReferenceNode.is(item) ? item.column : null;
    if (column?.kind !== 'ColumnNode') return selection;
    const name = column.column.name;
    const field = camelCase.fieldOf(name);
    if (field === name) return selection;
    return SelectionNode.create(AliasNode.create(item, IdentifierNode.create(field)));
  }
}

/**
 * After the CamelCasePlugin: a selected column whose field name differs gets
 * that name as its alias, and an alias (which the CamelCasePlugin writes in
 * snake_case) is written back as given, so a row's keys are the names Kysely
 * types it with. Write aliases of the builder in camelCase; raw SQL is left
 * as it is.
 */
class FieldAliasPlugin implements KyselyPlugin {
  readonly #aliases = new SelectionAliases();
  transformQuery({ node, queryId }: PluginTransformQueryArgs): RootOperationNode {
    return this.#aliases.transformNode(node, queryId);
  }
  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}

/** Builds and compiles only (a dummy driver): `.compile()` gives the text and parameters to run. */
export const db = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
  plugins: [camelCase, new FieldAliasPlugin()],
});

/** A query of the builder, or raw SQL (Kysely's `sql` template) with the row it declares. */
export type Query<R> = Compilable<R> | RawBuilder<R>;

function compiled(query: Query<unknown>): { sql: string; parameters: readonly unknown[] } {
  return 'isRawBuilder' in query ? query.compile(db) : query.compile();
}

/** A query's statement, typed by what it selects. */
export function compile<R>(query: Query<R>): Statement<R> {
  const { sql, parameters } = compiled(query);
  return { sql, parameters };
}

/** A parameter of a statement compiled once per shape, filled from the arguments of each run. */
class Placeholder {
  constructor(readonly name: string) {}
}

/** Stand-ins for the arguments `A`, to build a shape with: each becomes a parameter of its statement. */
function placeholders<A extends object>(): A {
  return new Proxy({} as A, { get: (_target, name) => new Placeholder(String(name)) });
}

interface CompiledShape {
  sql: string;
  /** a Placeholder, filled per run, or a constant of the shape */
  parameters: readonly unknown[];
}

/** Shapes one cache keeps at most; past it a new shape is compiled on every run (and not kept). */
const MAX_SHAPES = 512;

/**
 * Statements compiled once per shape. Building and compiling a query with
 * Kysely costs 10 to 50 µs of CPU (more with the parts' SQL); a request
 * sends the same few shapes again and again with other values. So a
 * statement is built from placeholders once per `key`, and each run only
 * fills its parameters: the text stays the same per shape (one prepared
 * statement per shape). `key` must name everything that changes the text
 * (fields, parts, which filters are present, a LIMIT written into it); the
 * builder sees placeholders, never the values, so a value cannot leak into
 * the text unnoticed.
 */
export class ShapeCache<A extends object> {
  readonly #shapes = new Map<string, CompiledShape>();

  statement<R>(key: string, args: A, build: (args: A) => Query<R>): Statement<R> {
    let shape = this.#shapes.get(key);
    if (!shape) {
      shape = compiled(build(placeholders<A>()));
      if (this.#shapes.size < MAX_SHAPES) this.#shapes.set(key, shape);
    }
    const values = args as Record<string, unknown>;
    return {
      sql: shape.sql,
      parameters: shape.parameters.map((value) => (value instanceof Placeholder ? values[value.name] : value)),
    };
  }
}

// prisma-kysely writes its own copy of the schema's enums; the code uses Prisma's (src/generated/prisma/enums.ts).
// The two must be the same unions: a compile error here means they are not.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameEnums: Same<KyselyEnums.LifecycleStatus, PrismaEnums.LifecycleStatus> &
  Same<KyselyEnums.MetricScope, PrismaEnums.MetricScope> &
  Same<KyselyEnums.RelationshipKind, PrismaEnums.RelationshipKind> = true;
void sameEnums;
