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

-- What one query row adds to its account's usage.
CREATE TYPE query_weight AS (account_id uuid, status text, result_key text, result_bytes bigint);

-- siteenv_query_usage_apply adds the weights of plus and subtracts those of
-- minus. Accounts are updated in account order, so two statements that
-- change the same accounts' queries lock their usage rows in one order and
-- cannot deadlock on them; a statement that changes nothing counted (a
-- lease renewal) writes nothing.
CREATE FUNCTION siteenv_query_usage_apply(plus query_weight[], minus query_weight[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO query_usage AS u (account_id, queued, running, retained_bytes)
    SELECT account_id, sum(s * (status = 'queued')::int), sum(s * (status = 'running')::int),
        sum(s * CASE WHEN result_key IS NOT NULL THEN result_bytes ELSE 0 END)
    FROM (SELECT p.*, 1 AS s FROM unnest(plus) p UNION ALL SELECT m.*, -1 FROM unnest(minus) m) w
    GROUP BY account_id
    HAVING sum(s * (status = 'queued')::int) <> 0 OR sum(s * (status = 'running')::int) <> 0
        OR sum(s * CASE WHEN result_key IS NOT NULL THEN result_bytes ELSE 0 END) <> 0
    ORDER BY account_id
    ON CONFLICT (account_id) DO UPDATE SET queued = u.queued + EXCLUDED.queued, running = u.running + EXCLUDED.running,
        retained_bytes = u.retained_bytes + EXCLUDED.retained_bytes
$$;

-- Statement triggers with transition tables: one usage write per statement
-- and account, however many rows the statement changed. PostgreSQL allows
-- transition tables only on single-event triggers, hence three.
CREATE FUNCTION siteenv_query_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM siteenv_query_usage_apply(
            ARRAY(SELECT ROW(n.account_id, n.status, n.result_key, n.result_bytes)::query_weight FROM new_rows n), '{}');
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM siteenv_query_usage_apply(
            ARRAY(SELECT ROW(n.account_id, n.status, n.result_key, n.result_bytes)::query_weight FROM new_rows n),
            ARRAY(SELECT ROW(o.account_id, o.status, o.result_key, o.result_bytes)::query_weight FROM old_rows o));
    ELSE
        PERFORM siteenv_query_usage_apply('{}',
            ARRAY(SELECT ROW(o.account_id, o.status, o.result_key, o.result_bytes)::query_weight FROM old_rows o));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER queries_usage_insert AFTER INSERT ON queries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION siteenv_query_usage();
CREATE TRIGGER queries_usage_update AFTER UPDATE ON queries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION siteenv_query_usage();
CREATE TRIGGER queries_usage_delete AFTER DELETE ON queries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION siteenv_query_usage();

-- The usage of the queries already stored; no query changes meanwhile.
LOCK TABLE queries IN SHARE MODE;
SELECT siteenv_query_usage_apply(ARRAY(SELECT ROW(account_id, status, result_key, result_bytes)::query_weight FROM queries), '{}');

-- GET /context's next result expiry: one index probe per account.
CREATE INDEX queries_account_retained ON queries (account_id, expires_at) WHERE result_key IS NOT NULL;
