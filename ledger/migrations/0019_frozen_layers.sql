-- A query's frozen layers are stored once each, by digest: a layer's frozen
-- entry (schema, provenance, coverage of its release) is the same for every
-- query of that release, and writing it into each query row was most of an
-- admission's work in PostgreSQL (about 13 KB of JSON a query in bench
-- api's small mix, parsed, compressed and logged every time). New rows hold
-- the digests in order (frozen_refs); rows admitted before keep their
-- frozen JSON. Entries are never deleted: they are few (one per layer
-- release and schema) and any query row may name them.
CREATE TABLE frozen_layers (
    digest bytea PRIMARY KEY CHECK (octet_length(digest) = 32),
    entry  jsonb NOT NULL
);
ALTER TABLE queries ALTER COLUMN frozen DROP NOT NULL;
ALTER TABLE queries ADD COLUMN frozen_refs bytea[];
-- NOT VALID: every existing row holds frozen and no refs already, and a
-- validation would scan the table under its exclusive lock.
ALTER TABLE queries ADD CONSTRAINT queries_frozen_once CHECK ((frozen IS NULL) <> (frozen_refs IS NULL)) NOT VALID;

-- lz4 instead of pglz for the large values written on the request path (a
-- stored response's body, a query's outcome): several times faster to
-- compress, for a little less compression. Only new values are affected.
-- A server built without lz4 keeps pglz: the migration must not stop it.
DO $$
BEGIN
    ALTER TABLE idempotency ALTER COLUMN body SET COMPRESSION lz4;
    ALTER TABLE queries ALTER COLUMN outcome SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 not supported by this server: pglz kept';
END $$;
