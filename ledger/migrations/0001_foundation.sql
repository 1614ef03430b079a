-- Foundation: accounts, integrations, keys, sections, configuration, portfolios,
-- rate-limit windows, idempotency records and the activity (audit) feed.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE accounts (
    account_id     uuid PRIMARY KEY,
    name           text,
    credit_balance bigint NOT NULL DEFAULT 0 CHECK (credit_balance >= 0),
    -- NULL: every dataset in the catalogue; otherwise the layer ids the account may use.
    dataset_ids    text[],
    created_at     timestamptz NOT NULL
);

-- An integration is one API access: its keys (original, replacements, additional)
-- share one total spending cap and one spend history.
CREATE TABLE integrations (
    integration_id uuid PRIMARY KEY,
    account_id     uuid NOT NULL REFERENCES accounts,
    spend_limit    bigint NOT NULL CHECK (spend_limit >= 0),
    credits_used   bigint NOT NULL DEFAULT 0 CHECK (credits_used >= 0),
    created_at     timestamptz NOT NULL
);
CREATE INDEX integrations_account ON integrations (account_id);

CREATE TABLE api_keys (
    key_id         uuid PRIMARY KEY,
    account_id     uuid NOT NULL REFERENCES accounts,
    integration_id uuid NOT NULL REFERENCES integrations,
    prefix         text NOT NULL,
    key_hash       bytea NOT NULL UNIQUE,
    scopes         text[] NOT NULL,
    -- NULL: all account-permitted datasets; '{}': none.
    dataset_ids    text[],
    principal_kind text NOT NULL CHECK (principal_kind IN ('machine', 'human')),
    created_at     timestamptz NOT NULL,
    revoked_at     timestamptz
);
CREATE INDEX api_keys_integration ON api_keys (integration_id);

CREATE TABLE sections (
    section_key text PRIMARY KEY,
    name        text NOT NULL,
    price       bigint NOT NULL CHECK (price >= 0),
    updated_at  timestamptz NOT NULL
);

CREATE TABLE settings (
    name       text PRIMARY KEY,
    value      bigint NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE portfolios (
    portfolio_id uuid PRIMARY KEY,
    account_id   uuid NOT NULL REFERENCES accounts,
    name         text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX portfolios_account ON portfolios (account_id, created_at, portfolio_id);

-- Fixed one-minute windows per account and bucket, shared by every replica.
CREATE TABLE rate_windows (
    account_id   uuid NOT NULL,
    bucket       text NOT NULL,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL,
    PRIMARY KEY (account_id, bucket, window_start)
);

CREATE TABLE idempotency (
    integration_id uuid NOT NULL REFERENCES integrations,
    idem_key       text NOT NULL,
    operation      text NOT NULL,
    fingerprint    bytea NOT NULL,
    state          text NOT NULL CHECK (state IN ('running', 'done')),
    status         integer,
    content_type   text,
    location       text,
    body           bytea,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (integration_id, idem_key)
);

CREATE TABLE activity (
    activity_id    uuid PRIMARY KEY,
    account_id     uuid NOT NULL,
    integration_id uuid NOT NULL,
    operation      text NOT NULL,
    outcome        text NOT NULL CHECK (outcome IN ('accepted', 'denied', 'completed', 'failed', 'revoked')),
    request_id     uuid NOT NULL,
    http_status    integer NOT NULL,
    error_code     text,
    resource_type  text,
    resource_id    text,
    created_at     timestamptz NOT NULL
);
CREATE INDEX activity_feed ON activity (integration_id, created_at DESC, activity_id DESC);
