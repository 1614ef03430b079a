-- query_usage holds each account's queued and running queries and retained
-- result bytes, kept by triggers on queries, so that an admission (and GET
-- /context) reads one row instead of aggregating every query the account
-- ever ran: the aggregate grew with the account's history (3.6 ms an
-- admission at 8,000 queries). Triggers, not the statements that change a
-- query, so that no write path can forget it.
CREATE TABLE query_usage (
    account_id     uuid PRIMARY KEY REFERENCES accounts,
    queued         bigint NOT NULL DEFAULT 0,
    running        bigint NOT NULL DEFAULT 0,
    retained_bytes bigint NOT NULL DEFAULT 0
);

-- siteenv_query_usage adds a query row's change to its account's usage: a
-- row trigger, whose one statement's plan plpgsql keeps (a statement
-- trigger over transition tables cost 0.35 ms an admission). Only changes
-- of what is counted fire it (the triggers' WHEN): a lease renewal does
-- not. Multi-row statements (the janitor's sweeps) update usage rows in
-- their rows' order; two such statements meeting on two accounts in
-- opposite orders are a deadlock PostgreSQL breaks by failing one, which
-- its janitor runs again at its next sweep. Admissions and finishes touch
-- one usage row each, last, and cannot take part in one.
CREATE FUNCTION siteenv_query_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    acct uuid;
    dq bigint := 0;
    dr bigint := 0;
    db bigint := 0;
BEGIN
    IF TG_OP <> 'DELETE' THEN
        acct := NEW.account_id;
        dq := (NEW.status = 'queued')::int;
        dr := (NEW.status = 'running')::int;
        db := CASE WHEN NEW.result_key IS NOT NULL THEN NEW.result_bytes ELSE 0 END;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        acct := OLD.account_id;
        dq := dq - (OLD.status = 'queued')::int;
        dr := dr - (OLD.status = 'running')::int;
        db := db - CASE WHEN OLD.result_key IS NOT NULL THEN OLD.result_bytes ELSE 0 END;
    END IF;
    IF dq = 0 AND dr = 0 AND db = 0 THEN
        RETURN NULL;
    END IF;
    -- An update first: the account's row exists but for its first query.
    UPDATE query_usage SET queued = queued + dq, running = running + dr, retained_bytes = retained_bytes + db
    WHERE account_id = acct;
    IF NOT FOUND THEN
        INSERT INTO query_usage AS u (account_id, queued, running, retained_bytes) VALUES (acct, dq, dr, db)
        ON CONFLICT (account_id) DO UPDATE SET queued = u.queued + EXCLUDED.queued, running = u.running + EXCLUDED.running,
            retained_bytes = u.retained_bytes + EXCLUDED.retained_bytes;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER queries_usage_insert AFTER INSERT ON queries FOR EACH ROW EXECUTE FUNCTION siteenv_query_usage();
CREATE TRIGGER queries_usage_update AFTER UPDATE OF status, result_key, result_bytes ON queries FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.result_key IS DISTINCT FROM NEW.result_key
        OR OLD.result_bytes IS DISTINCT FROM NEW.result_bytes)
    EXECUTE FUNCTION siteenv_query_usage();
CREATE TRIGGER queries_usage_delete AFTER DELETE ON queries FOR EACH ROW EXECUTE FUNCTION siteenv_query_usage();

-- The usage of the queries already stored; no query changes meanwhile.
LOCK TABLE queries IN SHARE MODE;
INSERT INTO query_usage (account_id, queued, running, retained_bytes)
SELECT account_id, count(*) FILTER (WHERE status = 'queued'), count(*) FILTER (WHERE status = 'running'),
    coalesce(sum(result_bytes) FILTER (WHERE result_key IS NOT NULL), 0)
FROM queries GROUP BY account_id;

-- GET /context's next result expiry: one index probe per account.
CREATE INDEX queries_account_retained ON queries (account_id, expires_at) WHERE result_key IS NOT NULL;
