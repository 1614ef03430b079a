-- Site de-duplication by fingerprint, site bounds for list pages, and the
-- external references clients register for their sites.

ALTER TABLE sites
    ADD COLUMN min_lon double precision NOT NULL DEFAULT 0,
    ADD COLUMN min_lat double precision NOT NULL DEFAULT 0,
    ADD COLUMN max_lon double precision NOT NULL DEFAULT 0,
    ADD COLUMN max_lat double precision NOT NULL DEFAULT 0;
CREATE INDEX sites_fingerprint ON sites (account_id, fingerprint) WHERE archived_at IS NULL;

-- A reference is bound to one boundary (fingerprint) for good; the site it
-- names may be replaced by another active site with the same boundary.
CREATE TABLE site_references (
    account_id  uuid NOT NULL REFERENCES accounts,
    namespace   text NOT NULL,
    reference   text NOT NULL,
    site_id     uuid NOT NULL REFERENCES sites,
    fingerprint text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (account_id, namespace, reference)
);
