// A report (DESIGN §3, §9): a value of `mesh-provisioner_applied` and of `prov.applied.<node>.<module>`.
import * as v from 'valibot';
import { nameField as name } from './fields.ts';

/** The states of a report. */
export const REPORT_STATES = ['applied', 'waiting', 'failed', 'removed'] as const;
/** What the engine did with a file. */
export const FILE_ACTIONS = ['written', 'unchanged', 'kept', 'refused'] as const;

/** A value of `mesh-provisioner_applied` and of `prov.applied.<node>.<module>`. */
export const ReportSchema = v.object({
  node: name,
  module: name,
  build: v.string(),
  state: v.picklist(REPORT_STATES),
  files: v.array(v.object({ path: v.string(), action: v.string(), digest: v.string(), reason: v.optional(v.string()) })),
  waiting: v.array(v.object({ kind: v.string(), name: v.string(), files: v.array(v.string()) })),
  reason: v.optional(v.string()),
  at: v.string(),
});
/** A report. */
export type Report = v.InferOutput<typeof ReportSchema>;
