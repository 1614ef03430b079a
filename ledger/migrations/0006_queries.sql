-- Asynchronous spatial queries: frozen inputs (site geometry, releases,
-- schemas, provenance), job claiming shared by replicas, retained results.

CREATE TABLE queries (
    query_id         uuid PRIMARY KEY,
    account_id       uuid NOT NULL REFERENCES accounts,
    integration_id   uuid NOT NULL REFERENCES integrations,
    site_id          uuid NOT NULL REFERENCES sites,
    site_geometry    jsonb NOT NULL,
    radius_m         double precision NOT NULL CHECK (radius_m BETWEEN 0 AND 10000),
    layer_ids        text[] NOT NULL,
    include_geometry boolean NOT NULL,
    -- Frozen per layer: release, schema and provenance captured at creation.
    frozen           jsonb NOT NULL,
    status           text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'partial', 'failed', 'cancelled')),
    -- Per-layer outcome once run.
    outcome          jsonb,
    result_key       text,
    result_bytes     bigint NOT NULL DEFAULT 0,
    result_count     bigint,
    attempts         integer NOT NULL DEFAULT 0,
    claimed_until    timestamptz,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    computed_at      timestamptz,
    expires_at       timestamptz,
    released_at      timestamptz
);
CREATE INDEX queries_history ON queries (account_id, created_at DESC, query_id DESC);
CREATE INDEX queries_queue ON queries (created_at) WHERE status = 'queued';
CREATE INDEX queries_running ON queries (account_id) WHERE status = 'running';
CREATE INDEX queries_retained ON queries (expires_at) WHERE result_key IS NOT NULL;
