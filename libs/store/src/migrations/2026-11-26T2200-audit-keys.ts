import { sql, type Kysely } from 'kysely';

/**
 * Keyed audit records (docs/audit.md): each record names the key its HMAC was made with. Records
 * written before have none: their hash is the plain SHA-256 they were written with.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE audit_records ADD COLUMN key_id text`.execute(db);
}
