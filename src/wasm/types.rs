//! Hand-written TypeScript types of the package's plain-object data (the classes and functions
//! get their signatures from `unchecked_param_type` / `unchecked_return_type`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Which list a call works on. */
export type Kind = "tools" | "resources" | "resourceTemplates" | "prompts";

/** A host's concern configuration: concern name → value (`null` removes, in updates). */
export type ConcernConfig = Record<string, string | number | null>;

/** A boolean filter expression: exactly one operator per object. */
export type Expr =
  | { all: Expr[] } | { any: Expr[] } | { not: Expr }
  | { group: string } | { tag: string } | { name: string }
  | { concern: Record<string, string | number> }
  | { annotation: Record<string, unknown> };

/** The filter of every list method; all parts AND together. */
export interface Filter {
  /** Member of ANY of these groups (subgroups included). */
  groups?: string[];
  /** Carries ALL of these tags. */
  tags?: string[];
  /** Carries NONE of these tags. */
  excludeTags?: string[];
  /** Name matches ANY of these globs (`*`, `?`). */
  namePatterns?: string[];
  /** Concern configuration for this call. */
  concerns?: ConcernConfig;
  /** Optional boolean tree. */
  expr?: Expr;
}

/** An MCP tool as a server lists it, with SEP-1300 membership. */
export interface Tool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: object;
  groups?: string[];
  tags?: string[];
  annotations?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A group (SEP-1300), possibly under a parent group. */
export interface Group { name: string; title?: string; description?: string; parent?: string; [key: string]: unknown }

/** A tag (SEP-1300). */
export interface Tag { name: string; description?: string; [key: string]: unknown }

/** A concern a server declares. */
export interface ConcernDeclaration {
  name: string;
  description?: string;
  values: (string | number)[] | { min: number; max: number };
  default?: string | number;
  [key: string]: unknown;
}

/** The catalog document a server loads (everything but `tools` optional). */
export interface CatalogDocument {
  server?: { name?: string; version?: string; instructions?: string };
  groups?: Group[];
  tags?: Tag[];
  concerns?: ConcernDeclaration[];
  concernMapping?: Record<string, Record<string, string | number>>;
  tools: Tool[];
  resources?: object[];
  resourceTemplates?: object[];
  prompts?: object[];
  [key: string]: unknown;
}

/** What `Sieve.filter` returns: positions of the matching items and the list's size. */
export interface Selection {
  kind: Kind;
  /** Matching items. */
  count: number;
  /** Items of this kind. */
  total: number;
  /** Positions of the matching items (pass to `Sieve.items`). */
  indices: Uint32Array;
  /** UTF-8 bytes of the filtered list result's JSON. */
  bytes: number;
  /** Estimated tokens (about four bytes a token). */
  tokens: number;
  /** Ignored parts of `filter.concerns` (undeclared concerns). */
  warnings: string[];
}

/** What `Sieve.list` returns: the filtered objects with their size. */
export interface ListResult {
  items: any[];
  count: number;
  total: number;
  bytes: number;
  tokens: number;
  warnings: string[];
}

/** Facet counts: how many items each option would leave. */
export interface Facets {
  /** Items passing the filter as it is. */
  total: number;
  /** Per group: items in it passing the rest of the filter (groups combine with ANY). */
  groups: { name: string; count: number }[];
  /** Per tag: items left if it were required, or excluded. */
  tags: { name: string; require: number; exclude: number }[];
  /** Per declared concern (with a list of values): items left with each value configured. */
  concerns: { name: string; values: { value: string; count: number }[] }[];
}

/** `Sieve.resolveConcerns`: the valid entries, with defaults applied as the server applies them. */
export interface ResolvedConcerns {
  concerns: Record<string, string>;
  effective: Record<string, string>;
  warnings: string[];
}

/** One reason `Sieve.explain` gives: a part of the filter, an effective concern or an `addFilter` callback that leaves the item out on its own. */
export type ExplainReason =
  | { code: "filter"; field: "groups" | "tags" | "excludeTags" | "namePatterns" | "expr"; filter: Filter }
  | { code: `concern:${string}`; configured: string; mapped: string | null }
  | { code: `js-filter:${number}`; id: number };

/** `Sieve.explain`: whether the filter shows the item, and every part that hides it (`cause`: the first one's kind, or `catalog` when there is no such item). */
export interface Explanation {
  kind: Kind;
  name: string;
  exists: boolean;
  visible: boolean;
  cause?: "catalog" | "filter" | "concern" | "js-filter";
  reasons: ExplainReason[];
}

/** Size of a JSON value. */
export interface SizeInfo { bytes: number; tokens: number }

/** A programmable filter: keep `item` (of `kind`)? Throwing is logged and ignored. */
export type FilterCallback = (item: any, kind: Kind) => boolean;

/** Options of `Sieve.addFilter`. */
export interface FilterOptions {
  /** Higher runs first (default 0). */
  priority?: number;
  /** Kinds it applies to (default all). */
  kinds?: Kind[];
}

/** An MCP task (2025-11-25). */
export interface Task {
  taskId: string;
  status: "working" | "input_required" | "completed" | "failed" | "cancelled";
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt?: string;
  ttl?: number | null;
  pollInterval?: number;
  /** Request method that created it; `tools/call` when absent. */
  method?: string;
  [key: string]: unknown;
}

/** A SEP-1904 task query. Timestamps are ISO 8601 with an offset. */
export interface TaskQuery {
  methods?: string[];
  taskIds?: string[];
  status?: Task["status"][];
  createdAfter?: string;
  createdBefore?: string;
  lastUpdatedAfter?: string;
  lastUpdatedBefore?: string;
  orderBy?: "createdAt" | "lastUpdatedAt";
  order?: "asc" | "desc";
  cursor?: string;
}

/** Options of `McpClient.connect` and `Sieve.fromServer`. */
export interface ConnectOptions {
  /** Sent in `notifications/initialized` (concern proposal Option A). */
  concerns?: ConcernConfig;
  clientInfo?: { name: string; version: string; [key: string]: unknown };
  capabilities?: object;
  protocolVersion?: string;
  /** Extra HTTP headers (e.g. `Authorization`). */
  headers?: Record<string, string>;
}

/** Options of `Sieve.export`. */
export interface ExportOptions {
  /** Which model API's shapes. */
  format: "anthropic" | "openai";
  /** The tools to export (default: every tool). */
  filter?: Filter;
  /** Tool search: these tools loaded, every other deferred (`defer_loading`). Absent: nothing deferred. */
  pinned?: string[];
  /** Where the provider reaches the MCP endpoint (Anthropic; default `http://127.0.0.1:8788/mcp`). */
  url?: string;
  /** The MCP server's name in `mcp_servers` (default `mcp-sieve`). */
  name?: string;
}

/** Per-tool configuration of an Anthropic `mcp_toolset`. */
export interface McpToolConfig { enabled: boolean; defer_loading: boolean }

/** Anthropic Messages API parameters (beta): spread into `client.beta.messages.create({...})`. */
export interface AnthropicExport {
  betas: string[];
  mcp_servers: { type: "url"; name: string; url: string }[];
  tools: (
    | { type: "mcp_toolset"; mcp_server_name: string; default_config: { enabled: boolean }; configs: Record<string, McpToolConfig> }
    | { type: "tool_search_tool_bm25_20251119"; name: "tool_search_tool_bm25" }
  )[];
}

/** A function inside an OpenAI namespace. */
export interface OpenAIFunction { type: "function"; name: string; description?: string; parameters: unknown; defer_loading: boolean }

/** OpenAI Responses API `tools`: spread into `client.responses.create({...})`. */
export interface OpenAIExport {
  tools: ({ type: "namespace"; name: string; description: string; tools: OpenAIFunction[] } | { type: "tool_search" })[];
}

/** `sieve.export` (plain JS beside the bindings; see `ExportOptions`). */
export interface Sieve {
  /**
   * What a host passes to a model API for the tools `options.filter` selects: Anthropic's MCP
   * connector (`betas`, `mcp_servers`, an `mcp_toolset` with per-tool `configs`) or OpenAI's
   * tool-search namespaces (from groups, at most 10 functions each). Throws an `Error` with
   * `code` -32602 for a bad format.
   *
   * @example
   * ```js
   * const params = sieve.export({ format: 'openai', filter: { groups: ['email'] }, pinned: ['send_email'] });
   * params.tools.at(-1); // { type: 'tool_search' }
   * ```
   */
  export(options: ExportOptions & { format: "anthropic" }): AnthropicExport;
  export(options: ExportOptions & { format: "openai" }): OpenAIExport;
}

/** Every error this package throws: a real `Error` with the JSON-RPC `code` and `data`. */
export interface SieveError extends Error {
  code: number;
  data: any;
}
"#;
