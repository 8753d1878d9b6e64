import { sql, type Kysely } from 'kysely';

/**
 * Rules beyond one worker (docs/teams.md, "Rules"): a person's "always" decision may carry a
 * `rule_key` (`session:<id>`, `template:<name>`, `team:<group>`), and a worker's rules include
 * every such decision whose key is one of its own. This index finds them by key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX events_rule_keys_idx ON events ((data->>'rule_key'))
    WHERE type = 'control_response' AND data->>'scope' = 'always' AND data ? 'rule_key'`.execute(db);
}
