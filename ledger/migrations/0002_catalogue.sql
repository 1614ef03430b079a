-- The layer catalogue and its immutable releases, the gazetteer (address points
-- and cadastral parcels), saved sites and the section access bought for them.

CREATE TABLE layers (
    layer_id           text PRIMARY KEY,
    section_key        text NOT NULL REFERENCES sections,
    name               text NOT NULL,
    description        text,
    schema_version     text NOT NULL,
    field_schema       jsonb NOT NULL,
    units              jsonb NOT NULL,
    radius_max_m       double precision NOT NULL CHECK (radius_max_m BETWEEN 0 AND 10000),
    sources            jsonb NOT NULL,
    jurisdictions      text[] NOT NULL,
    coverage           jsonb,
    geometry_types     text[] NOT NULL,
    current_release_id text,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX layers_section ON layers (section_key);

-- A release is immutable once inserted; layers.current_release_id moves.
CREATE TABLE releases (
    layer_id       text NOT NULL REFERENCES layers,
    release_id     text NOT NULL,
    schema_version text NOT NULL,
    field_schema   jsonb NOT NULL,
    units          jsonb NOT NULL,
    sources        jsonb NOT NULL,
    coverage       jsonb,
    manifest_key   text NOT NULL,
    feature_count  bigint NOT NULL,
    tile_count     integer NOT NULL,
    bytes          bigint NOT NULL,
    published_at   timestamptz NOT NULL,
    PRIMARY KEY (layer_id, release_id)
);
ALTER TABLE layers ADD CONSTRAINT layers_current_release
    FOREIGN KEY (layer_id, current_release_id) REFERENCES releases (layer_id, release_id) DEFERRABLE INITIALLY DEFERRED;

CREATE TABLE addresses (
    address_id bigserial PRIMARY KEY,
    label      text NOT NULL,
    number     text NOT NULL,
    street     text NOT NULL,
    locality   text NOT NULL,
    state      text NOT NULL,
    postcode   text NOT NULL,
    longitude  double precision NOT NULL,
    latitude   double precision NOT NULL
);
CREATE UNIQUE INDEX addresses_label ON addresses (label);
CREATE INDEX addresses_label_trgm ON addresses USING gin (label gin_trgm_ops);

CREATE TABLE parcels (
    jurisdiction text NOT NULL,
    cadastre_id  text NOT NULL,
    address      text,
    geometry     jsonb NOT NULL,
    min_lon      double precision NOT NULL,
    min_lat      double precision NOT NULL,
    max_lon      double precision NOT NULL,
    max_lat      double precision NOT NULL,
    PRIMARY KEY (jurisdiction, cadastre_id)
);
CREATE INDEX parcels_cadastre_trgm ON parcels USING gin (cadastre_id gin_trgm_ops);
CREATE INDEX parcels_address ON parcels (address);

CREATE TABLE sites (
    site_id      uuid PRIMARY KEY,
    account_id   uuid NOT NULL REFERENCES accounts,
    name         text,
    portfolio_id uuid REFERENCES portfolios,
    geometry     jsonb NOT NULL,
    fingerprint  text NOT NULL,
    area_m2      double precision NOT NULL,
    created_at   timestamptz NOT NULL,
    archived_at  timestamptz
);
CREATE INDEX sites_account ON sites (account_id, created_at, site_id);

-- Section access bought for a site (a changed boundary is a different site).
CREATE TABLE section_grants (
    site_id     uuid NOT NULL REFERENCES sites,
    section_key text NOT NULL REFERENCES sections,
    account_id  uuid NOT NULL REFERENCES accounts,
    purchase_id uuid,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (site_id, section_key)
);
