-- A version of the layer catalogue (layers, their sections and releases),
-- so replicas can keep catalogue reads in memory and still see a change on
-- the very next request: authentication reads the version in its own
-- statement (keys.go), and a cached answer of an older version is not used.
--
-- Every row a transaction inserts, updates or deletes in those tables bumps
-- the version once more when the transaction commits (deferred constraint
-- triggers), so readers see the new version exactly when they see the new
-- rows, never before; and the version row is locked last, at commit, so
-- concurrent catalogue writers cannot deadlock on it.
CREATE TABLE catalogue_version (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint NOT NULL
);
INSERT INTO catalogue_version (version) VALUES (1);

CREATE FUNCTION catalogue_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalogue_version SET version = version + 1;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER layers_catalogue_version AFTER INSERT OR UPDATE OR DELETE ON layers
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION catalogue_version_bump();
CREATE CONSTRAINT TRIGGER sections_catalogue_version AFTER INSERT OR UPDATE OR DELETE ON sections
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION catalogue_version_bump();
CREATE CONSTRAINT TRIGGER releases_catalogue_version AFTER INSERT OR UPDATE OR DELETE ON releases
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION catalogue_version_bump();
