import type { Migration } from 'kysely';
import * as eventStore from './2026-11-22T0530-event-store.js';
import * as appendMany from './2026-11-22T0900-append-many.js';
import * as control from './2026-11-22T1000-control.js';
import * as sessions from './2026-11-22T1200-sessions.js';
import * as decide from './2026-11-22T1500-decide.js';
import * as appendGenericPlans from './2026-11-22T1700-append-generic-plans.js';
import * as appendManySetBased from './2026-11-22T2000-append-many-set-based.js';
import * as rulesFromDecisions from './2026-11-24T2330-rules-from-decisions.js';
import * as audit from './2026-11-25T0300-audit.js';
import * as webhooks from './2026-11-25T0600-webhooks.js';
import * as auditKeys from './2026-11-26T2200-audit-keys.js';
import * as eventRetention from './2026-11-25T1100-event-retention.js';
import * as eventSources from './2026-11-26T2100-event-sources.js';
import * as sessionAccess from './2026-11-27T1600-session-access.js';
import * as approvals from './2026-11-27T1700-approvals.js';
import * as ruleKeys from './2026-11-27T1800-rule-keys.js';
import * as ruleRevocations from './2026-11-27T1810-rule-revocations.js';

/**
 * The owners of tables, each group named after the service that applies its migrations (and
 * the only one that writes its tables): no other service does.
 */
export type MigrationGroup = 'event-ingest' | 'session' | 'control';

export interface MigrationGroupOf {
  /** Where the group's applied migrations are recorded (Kysely's table; its lock is `<table>_lock`). */
  table: string;
  /** By timestamped name, in one explicit index: bundlers and single-file builds keep them; the order is the names' order. */
  migrations: Record<string, Migration>;
}

/**
 * Every migration, by owner. Until issue 21 every service applied all of them, recorded in
 * Kysely's default table `kysely_migration`; a database migrated then has its rows copied into
 * each group's own table the first time the group is migrated (`migrate.ts`), under the same
 * names.
 */
export const migrationGroups: Record<MigrationGroup, MigrationGroupOf> = {
  'event-ingest': {
    // Named `event-log` until issue 35 (its records table keeps that name).
    table: 'svc_migrations_event_log',
    migrations: {
      '2026-11-22T0530-event-store': eventStore,
      '2026-11-22T0900-append-many': appendMany,
      '2026-11-22T1000-control': control,
      '2026-11-22T1500-decide': decide,
      '2026-11-22T1700-append-generic-plans': appendGenericPlans,
      '2026-11-22T2000-append-many-set-based': appendManySetBased,
      '2026-11-24T2330-rules-from-decisions': rulesFromDecisions,
      '2026-11-26T2100-event-sources': eventSources,
      '2026-11-27T1800-rule-keys': ruleKeys,
    },
  },
  session: {
    // Named `sessions` until issue 35 (its records table keeps that name).
    table: 'svc_migrations_sessions',
    migrations: {
      '2026-11-22T1200-sessions': sessions,
      '2026-11-25T1100-event-retention': eventRetention,
      '2026-11-27T1600-session-access': sessionAccess,
    },
  },
  control: {
    // Named `audit` until issue 35. Its records stay in the table of that name, where databases
    // migrated before hold them: nothing to copy, and an older build still finds them.
    table: 'svc_migrations_audit',
    // The control service's own tables: the audit trail, then webhooks.
    migrations: {
      '2026-11-25T0300-audit': audit,
      '2026-11-25T0600-webhooks': webhooks,
      '2026-11-26T2200-audit-keys': auditKeys,
      '2026-11-27T1700-approvals': approvals,
      '2026-11-27T1810-rule-revocations': ruleRevocations,
    },
  },
};
