// A report (DESIGN §3, §7, §14): a value of `mesh-provisioner_applied` and of `prov.applied.<node>.<module>`.
import * as v from 'valibot';
import { nameField as name } from './fields.ts';

/** The states of a report. */
export const REPORT_STATES = ['applied', 'waiting', 'failed', 'removed'] as const;

/** Most inputs a file's `from` lists, the archive included, before the count of the rest (DESIGN §14). */
export const MAX_FROM_INPUTS = 64;

/**
 * One input of a file's content (DESIGN §14): the placeholder's `kind`, the bus `key` the value was
 * read from and `rev`, the stream sequence of the entry used (none for a vault name); the archive
 * as `{kind: "archive", key: <ref>, digest}`.
 */
export const FromInputSchema = v.object({
  kind: v.string(),
  key: v.string(),
  rev: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  digest: v.optional(v.string()),
});
/** One input of a file's content. */
export type FromInput = v.InferOutput<typeof FromInputSchema>;

/** The count of the inputs past MAX_FROM_INPUTS (DESIGN §14): `{more: N}`. */
export const FromMoreSchema = v.object({ more: v.pipe(v.number(), v.integer(), v.minValue(1)) });
/** The count of the inputs a `from` leaves out. */
export type FromMore = v.InferOutput<typeof FromMoreSchema>;

/** A file's `from`: its inputs, at most MAX_FROM_INPUTS, then the count of the rest. */
export const FromSchema = v.array(v.union([FromInputSchema, FromMoreSchema]));
/** A file's `from`. */
export type From = v.InferOutput<typeof FromSchema>;

/** A file's drift (DESIGN §14): restores since the client started and the time of the last (ISO). */
export const DriftSchema = v.object({ count: v.pipe(v.number(), v.integer(), v.minValue(0)), last: v.string() });
/** A file's drift. */
export type Drift = v.InferOutput<typeof DriftSchema>;

/** One file of a report: what the engine did with it, its digest, its inputs and its drift. */
export const ReportFileSchema = v.object({
  path: v.string(),
  action: v.string(),
  digest: v.string(),
  reason: v.optional(v.string()),
  from: v.optional(FromSchema),
  drift: v.optional(DriftSchema),
});
/** One file of a report. */
export type ReportFile = v.InferOutput<typeof ReportFileSchema>;

/** A value of `mesh-provisioner_applied` and of `prov.applied.<node>.<module>`. */
export const ReportSchema = v.object({
  node: name,
  module: name,
  build: v.string(),
  state: v.picklist(REPORT_STATES),
  files: v.array(ReportFileSchema),
  waiting: v.array(v.object({ kind: v.string(), name: v.string(), files: v.array(v.string()) })),
  reason: v.optional(v.string()),
  at: v.string(),
});
/** A report. */
export type Report = v.InferOutput<typeof ReportSchema>;
