-- Artifacts: immutable files (report PDFs, map images) in the object store under
-- artifacts/<account_id>/<artifact_id>/<filename>, and the short-lived download
-- capabilities (deliveries) minted for them. report_id gets its foreign key when
-- the reports table exists (a later migration).
CREATE TABLE artifacts (
    artifact_id uuid PRIMARY KEY,
    account_id  uuid NOT NULL REFERENCES accounts,
    report_id   uuid,
    revision_id uuid,
    revision    integer CHECK (revision >= 1),
    filename    text NOT NULL CHECK (filename ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    media_type  text NOT NULL CHECK (media_type IN ('application/pdf', 'image/jpeg')),
    size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    -- Private: never shown to clients.
    storage_key text NOT NULL UNIQUE,
    -- The layer ids whose data the file holds. NULL: unknown (a historical
    -- file), readable only by keys without a dataset restriction.
    dataset_ids text[],
    created_at  timestamptz NOT NULL
);
CREATE INDEX artifacts_account ON artifacts (account_id, created_at, artifact_id);
CREATE INDEX artifacts_report ON artifacts (report_id) WHERE report_id IS NOT NULL;

-- A delivery is a capability: only the SHA-256 of the token is stored. Its
-- authority is rechecked on every download through the minting key.
CREATE TABLE deliveries (
    capability_hash bytea PRIMARY KEY CHECK (length(capability_hash) = 32),
    delivery_id     uuid NOT NULL UNIQUE,
    artifact_id     uuid NOT NULL REFERENCES artifacts,
    account_id      uuid NOT NULL REFERENCES accounts,
    key_id          uuid NOT NULL REFERENCES api_keys,
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    created_at      timestamptz NOT NULL
);
CREATE INDEX deliveries_key ON deliveries (key_id);
CREATE INDEX deliveries_expires ON deliveries (expires_at);
