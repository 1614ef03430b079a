-- Location search and resolve over the gazetteer.
--
-- Address search is two-stage (ledger/locations.go): a trigram search over the
-- distinct streets of the gazetteer (street, locality, state, postcode: about
-- one row per 20 to 100 addresses, so the trigram index stays small and fast
-- at national scale), then the addresses of the best streets, ranked with the
-- house number. address_streets is derived from addresses by the statement
-- triggers below, so every writer of addresses (ReplaceGazetteer's TRUNCATE
-- and COPY included) keeps it in step without knowing about it.

-- gazetteer_normalise is the one definition of the search form of a text:
-- lower case, runs of anything but letters, digits and '/' become one space,
-- and street types are written in their short standard form, whichever way
-- they came (street, str, st -> st; avenue, av, ave -> ave; ...). Both the
-- stored search column and every query go through it, so "12 smth st
-- parramata" and "12 Smith Street, PARRAMATTA" meet in the same form. The
-- short form, not the long one, because a street type says little about
-- which street is meant: spelt out, "street" alone is 7 trigrams, enough to
-- make "smith street" look like "queen street" (word similarity 0.58).
-- ("st" for Saint also stays "st": harmless, as both sides agree.)
CREATE FUNCTION gazetteer_normalise(s text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT coalesce(string_agg(coalesce(a.short, w.tok), ' ' ORDER BY w.i), '')
FROM regexp_split_to_table(lower(s), '[^[:alnum:]/]+') WITH ORDINALITY AS w(tok, i)
LEFT JOIN (VALUES
    ('street', 'st'), ('str', 'st'), ('road', 'rd'), ('avenue', 'ave'), ('av', 'ave'),
    ('crescent', 'cres'), ('cr', 'cres'), ('crs', 'cres'), ('drive', 'dr'), ('drv', 'dr'),
    ('highway', 'hwy'), ('parade', 'pde'), ('place', 'pl'), ('court', 'ct'), ('crt', 'ct'),
    ('circuit', 'cct'), ('terrace', 'tce'), ('terr', 'tce'), ('close', 'cl'), ('lane', 'ln'),
    ('boulevard', 'bvd'), ('blvd', 'bvd'), ('grove', 'gr'), ('gve', 'gr'),
    ('esplanade', 'esp'), ('square', 'sq'), ('parkway', 'pkwy'), ('pwy', 'pkwy'),
    ('freeway', 'fwy'), ('way', 'wy'), ('circle', 'cir'), ('gardens', 'gdns'), ('heights', 'hts'),
    ('promenade', 'prom'), ('ridge', 'rdge'), ('retreat', 'rtt'), ('track', 'trk'), ('trail', 'trl'),
    ('walk', 'wk'), ('link', 'lnk'), ('mount', 'mt')
) AS a(word, short) ON a.word = w.tok
WHERE w.tok <> ''
$$;

CREATE TABLE address_streets (
    street   text NOT NULL,
    locality text NOT NULL,
    state    text NOT NULL,
    postcode text NOT NULL,
    -- gazetteer_normalise(street locality state postcode)
    search   text NOT NULL,
    PRIMARY KEY (street, locality, state, postcode)
);
CREATE INDEX address_streets_search_trgm ON address_streets USING gin (search gin_trgm_ops);

-- The addresses of a street, for the second stage of the search.
CREATE INDEX addresses_street ON addresses (street, locality, state, postcode);
-- Address selectors carry 'adr_' || md5(label): an opaque identifier that
-- survives a wholesale reload of the gazetteer (labels are unique). md5 is an
-- identifier here, not a security measure.
CREATE INDEX addresses_key ON addresses (md5(label));
-- Coverage checks near a point.
CREATE INDEX addresses_point ON addresses USING gist (point(longitude, latitude));
-- Parcels whose bounding box holds a point (exact containment is decided in Go).
CREATE INDEX parcels_bbox ON parcels USING gist (box(point(min_lon, min_lat), point(max_lon, max_lat)));
-- Parcel search by the start of a cadastre identifier ("12/DP3456" ...).
CREATE INDEX parcels_cadastre_prefix ON parcels (upper(cadastre_id) text_pattern_ops);
-- Superseded by the street index above; dropping it also makes loading cheaper.
DROP INDEX IF EXISTS addresses_label_trgm;

CREATE FUNCTION address_streets_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO address_streets (street, locality, state, postcode, search)
    SELECT d.street, d.locality, d.state, d.postcode,
           gazetteer_normalise(d.street || ' ' || d.locality || ' ' || d.state || ' ' || d.postcode)
    FROM (SELECT DISTINCT street, locality, state, postcode FROM new_rows) d
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION address_streets_prune() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM address_streets s
    USING (SELECT DISTINCT street, locality, state, postcode FROM old_rows) o
    WHERE (s.street, s.locality, s.state, s.postcode) = (o.street, o.locality, o.state, o.postcode)
      AND NOT EXISTS (SELECT 1 FROM addresses a
                      WHERE (a.street, a.locality, a.state, a.postcode) = (s.street, s.locality, s.state, s.postcode));
    RETURN NULL;
END $$;

CREATE FUNCTION address_streets_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE address_streets;
    RETURN NULL;
END $$;

CREATE TRIGGER addresses_streets_insert AFTER INSERT ON addresses
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION address_streets_add();
CREATE TRIGGER addresses_streets_update_add AFTER UPDATE ON addresses
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION address_streets_add();
CREATE TRIGGER addresses_streets_update_prune AFTER UPDATE ON addresses
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION address_streets_prune();
CREATE TRIGGER addresses_streets_delete AFTER DELETE ON addresses
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION address_streets_prune();
CREATE TRIGGER addresses_streets_truncate AFTER TRUNCATE ON addresses
    FOR EACH STATEMENT EXECUTE FUNCTION address_streets_clear();

-- Streets of a gazetteer loaded before this migration.
INSERT INTO address_streets (street, locality, state, postcode, search)
SELECT d.street, d.locality, d.state, d.postcode,
       gazetteer_normalise(d.street || ' ' || d.locality || ' ' || d.state || ' ' || d.postcode)
FROM (SELECT DISTINCT street, locality, state, postcode FROM addresses) d;
