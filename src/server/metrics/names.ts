// The seat's figures as Prometheus names them: each name, its labels and its HELP text, in one table
// so that deploy/README.md, the alert rules and the test read the same words as the endpoint serves.

/** What every figure's name starts with, prom-client's process figures included. */
export const METRIC_PREFIX = 'provisioner_';

/** Each figure of the seat: its name and HELP text. */
export const FIGURES = {
  nodes: {
    name: 'provisioner_nodes',
    help: "Nodes with a plan by their client's last word (DESIGN §14): alive, silent, or engine_down; left out while the seat keeps no liveness",
  },
  modules: {
    name: 'provisioner_modules',
    help: 'Modules on nodes by the state of their latest report in mesh-provisioner_applied: applied, waiting, failed, removed',
  },
  reportsOutOfShape: {
    name: 'provisioner_reports_out_of_shape',
    help: 'Reports in mesh-provisioner_applied whose value does not validate (server.js query applied lists them)',
  },
  rollouts: {
    name: 'provisioner_rollouts',
    help: 'Rollouts of a build by state (DESIGN §12): rolling, halted, done, aborted, superseded',
  },
  rolloutState: {
    name: 'provisioner_rollout_state',
    help: "1 for each module's rollout in its state (server.js rollout MODULE says why)",
  },
  driftRestores: {
    name: 'provisioner_drift_restores',
    help: "Files their engines put back after an edit on disk: the sum of the latest reports' drift.count, each counting since its node's client started",
  },
  planWrites: {
    name: 'provisioner_plan_writes_total',
    help: 'Writes of the seat to mesh-provisioner_plans by op (put, delete) and result (ok, error: tried again)',
  },
  verbRequests: {
    name: 'provisioner_verb_requests_total',
    help: 'Requests to mesh-provisioner.provisioning by what they asked (invalid: refused as out of shape), the busy ones included',
  },
  verbBusy: {
    name: 'provisioner_verb_busy_total',
    help: 'Requests to mesh-provisioner.provisioning answered busy: as many were being answered as the seat takes at once',
  },
  seatReady: {
    name: 'provisioner_seat_ready',
    help: "1 once the seat has its buckets and serves; 0 while it waits for the bus or for init's buckets",
  },
} as const;
