-- Rate-limit windows are counters, not records: UNLOGGED takes them out of
-- the WAL, so counting a request costs no WAL flush at commit. A crash (or a
-- failover to a standby, which never receives unlogged tables) empties the
-- table: each account's current window restarts from zero, so at most one
-- extra window's worth of requests can be admitted in the minute of the
-- crash. No money, grant or idempotency record lives here, and every replica
-- still counts in this one table, so limits stay exact across replicas.
ALTER TABLE rate_windows SET UNLOGGED;
