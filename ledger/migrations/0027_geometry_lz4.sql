-- lz4 instead of pglz for the geometries and the other large JSON values
-- the ledger writes: a site drawn with 10,000 positions is about 240 KB of
-- JSON, written twice by its first query (the site and the query's copy),
-- and pglz took about 6 ms to compress each copy against lz4's 1.3. Only
-- new values are affected. As 0019: a server built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE sites ALTER COLUMN geometry SET COMPRESSION lz4;
    ALTER TABLE queries ALTER COLUMN site_geometry SET COMPRESSION lz4;
    ALTER TABLE parcels ALTER COLUMN geometry SET COMPRESSION lz4;
    ALTER TABLE report_revisions ALTER COLUMN evidence SET COMPRESSION lz4;
    ALTER TABLE layers ALTER COLUMN coverage SET COMPRESSION lz4;
    ALTER TABLE releases ALTER COLUMN coverage SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 not supported by this server: pglz kept';
END $$;
