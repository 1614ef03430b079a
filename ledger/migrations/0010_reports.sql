-- Site reports: the order (paid through a purchase of kind report), the build
-- job claimed by any replica, immutable revisions with their frozen evidence
-- and retained text, and historical website reports imported as PDF only.

CREATE TABLE reports (
    report_id      uuid PRIMARY KEY,
    account_id     uuid NOT NULL REFERENCES accounts,
    -- NULL for an imported website report (no integration ordered it).
    integration_id uuid REFERENCES integrations,
    idem_key       text,
    site_id        uuid REFERENCES sites,
    purchase_id    uuid UNIQUE REFERENCES purchases,
    origin         text NOT NULL CHECK (origin IN ('api', 'website')),
    jurisdiction   text CHECK (jurisdiction IN ('ACT', 'NSW', 'NT', 'QLD', 'SA', 'TAS', 'VIC', 'WA')),
    status         text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    reason_code    text,
    -- The layers in the report's scope, fixed when ordered. NULL: unknown (a
    -- historical report), readable only by keys without a dataset restriction.
    dataset_ids    text[],
    attempts       integer NOT NULL DEFAULT 0,
    claimed_until  timestamptz,
    created_at     timestamptz NOT NULL,
    completed_at   timestamptz,
    UNIQUE (integration_id, idem_key),
    CHECK ((status = 'failed') = (reason_code IS NOT NULL))
);
CREATE INDEX reports_history ON reports (account_id, created_at, report_id);
CREATE INDEX reports_queue ON reports (created_at) WHERE status IN ('queued', 'running');

CREATE TABLE report_revisions (
    revision_id       uuid PRIMARY KEY,
    report_id         uuid NOT NULL REFERENCES reports,
    revision          integer NOT NULL CHECK (revision >= 1),
    content_status    text NOT NULL CHECK (content_status IN ('available', 'unavailable')),
    provenance_status text NOT NULL CHECK (provenance_status IN ('captured', 'partial', 'unknown')),
    limitations       text[] NOT NULL,
    -- Frozen evidence as the builder wrote it; NULL when unknown (imported).
    evidence          jsonb,
    created_at        timestamptz NOT NULL,
    UNIQUE (report_id, revision)
);

-- Retained text, one row per section, pinned to its revision.
CREATE TABLE report_sections (
    revision_id uuid NOT NULL REFERENCES report_revisions,
    idx         integer NOT NULL CHECK (idx BETWEEN 0 AND 199),
    heading     text,
    body        text NOT NULL CHECK (octet_length(body) <= 8192),
    PRIMARY KEY (revision_id, idx)
);

-- The purchase a report refunds must be that report's.
ALTER TABLE purchases ADD CONSTRAINT purchases_report_fk FOREIGN KEY (report_id) REFERENCES reports DEFERRABLE INITIALLY DEFERRED;
CREATE INDEX artifacts_revision ON artifacts (revision_id) WHERE revision_id IS NOT NULL;
