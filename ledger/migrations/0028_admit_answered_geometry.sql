-- siteenv_admit_answered (0020) returns the site's geometry only when the
-- site existed before the call: a site it created has the caller's
-- geometry, and reading back one drawn with 10,000 positions (about 240 KB
-- of JSON) cost about 4 ms of the request. The query stores the created
-- site's geometry from its parameter. Otherwise as 0020.
CREATE OR REPLACE FUNCTION siteenv_admit_answered(
    p_key_hash bytea, p_scopes text[], p_datasets text[], p_catalogue bigint,
    p_idem_key text, p_operation text, p_fingerprint bytea, p_at timestamptz,
    p_resp_status integer, p_resp_type text, p_resp_location text, p_resp_body bytea,
    p_site_id uuid, p_site_name text, p_portfolio_id uuid, p_site_geometry jsonb, p_site_fingerprint text, p_area_m2 double precision,
    p_min_lon double precision, p_min_lat double precision, p_max_lon double precision, p_max_lat double precision,
    p_sections text[],
    p_query_id uuid, p_created_at timestamptz, p_radius_m double precision, p_layer_ids text[], p_include_geometry boolean, p_frozen_refs bytea[],
    p_window bigint, p_per_minute bigint, p_max_queued bigint, p_max_retained bigint,
    p_status text, p_outcome jsonb, p_result_key text, p_result_bytes bigint, p_result_count bigint,
    p_computed_at timestamptz, p_expires_at timestamptz, p_token uuid, p_lease_s double precision,
    p_activity_id uuid, p_act_operation text, p_act_outcome text, p_request_id uuid, p_http_status integer,
    p_error_code text, p_resource_type text, p_resource_id text,
    OUT key_id uuid, OUT account_id uuid, OUT integration_id uuid, OUT account_name text, OUT principal_kind text,
    OUT scopes text[], OUT key_datasets text[], OUT account_datasets text[], OUT catalogue bigint,
    OUT site_id uuid, OUT site_name text, OUT portfolio_id uuid, OUT site_geometry jsonb, OUT site_fingerprint text,
    OUT area_m2 double precision, OUT min_lon double precision, OUT min_lat double precision, OUT max_lon double precision,
    OUT max_lat double precision, OUT site_created_at timestamptz, OUT site_archived_at timestamptz, OUT granted text[],
    OUT site_created boolean, OUT rate bigint, OUT stored text)
LANGUAGE plpgsql AS $$
DECLARE
    live boolean;
    u record;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true);

    SELECT k.key_id, k.account_id, k.integration_id, a.name, k.principal_kind, k.scopes, k.dataset_ids, a.dataset_ids,
            (SELECT version FROM catalogue_version),
            k.revoked_at IS NULL AND k.scopes @> p_scopes AND (k.dataset_ids IS NULL OR k.dataset_ids @> p_datasets)
            AND (a.dataset_ids IS NULL OR a.dataset_ids @> p_datasets)
        INTO key_id, account_id, integration_id, account_name, principal_kind, scopes, key_datasets, account_datasets, catalogue, live
        FROM api_keys k JOIN accounts a USING (account_id) WHERE k.key_hash = p_key_hash;
    PERFORM siteenv_require(FOUND AND live AND catalogue = p_catalogue, 'principal');

    INSERT INTO idempotency (integration_id, idem_key, operation, fingerprint, state, status, content_type, location, body,
            created_at, updated_at)
        VALUES (siteenv_admit_answered.integration_id, p_idem_key, p_operation, p_fingerprint, 'done', p_resp_status, p_resp_type,
            nullif(p_resp_location, ''), p_resp_body, p_at, p_at)
        ON CONFLICT DO NOTHING;
    PERFORM siteenv_require(FOUND, 'idempotency claim');

    PERFORM 1 FROM accounts a WHERE a.account_id = siteenv_admit_answered.account_id FOR UPDATE;

    site_created := false;
    IF scopes @> ARRAY['sites:write'] THEN
        INSERT INTO sites (site_id, account_id, name, portfolio_id, geometry, fingerprint, area_m2,
                min_lon, min_lat, max_lon, max_lat, created_at)
            SELECT p_site_id, siteenv_admit_answered.account_id, p_site_name, p_portfolio_id, p_site_geometry, p_site_fingerprint, p_area_m2,
                p_min_lon, p_min_lat, p_max_lon, p_max_lat, p_at
            WHERE NOT EXISTS (SELECT 1 FROM sites s WHERE s.account_id = siteenv_admit_answered.account_id AND s.fingerprint = p_site_fingerprint
                AND s.archived_at IS NULL);
        site_created := FOUND;
    END IF;

    SELECT s.site_id, s.name, s.portfolio_id, CASE WHEN s.site_id = p_site_id THEN NULL ELSE s.geometry END, s.fingerprint, s.area_m2, s.min_lon, s.min_lat, s.max_lon, s.max_lat,
            s.created_at, s.archived_at,
            coalesce((SELECT array_agg(g.section_key) FROM section_grants g WHERE g.site_id = s.site_id AND g.account_id = s.account_id), '{}')
        INTO site_id, site_name, portfolio_id, site_geometry, site_fingerprint, area_m2, min_lon, min_lat, max_lon, max_lat,
            site_created_at, site_archived_at, granted
        FROM sites s WHERE s.account_id = siteenv_admit_answered.account_id AND s.fingerprint = p_site_fingerprint AND s.archived_at IS NULL
        ORDER BY s.created_at LIMIT 1;
    PERFORM siteenv_require(FOUND AND p_sections <@ granted, 'site');

    rate := rate_count(account_id, 'query_admissions', p_window);
    SELECT coalesce(max(q.queued), 0) AS queued, coalesce(max(q.retained_bytes), 0) AS retained INTO u
        FROM query_usage q WHERE q.account_id = siteenv_admit_answered.account_id;
    IF (rate & 4294967295) > p_per_minute OR u.queued >= p_max_queued OR u.retained >= p_max_retained THEN
        UPDATE idempotency i SET state = 'running', status = NULL, content_type = NULL, location = NULL, body = NULL,
                claim_token = p_token, lease_until = p_created_at + interval '1 second' * p_lease_s
            WHERE i.integration_id = siteenv_admit_answered.integration_id AND i.idem_key = p_idem_key;
        RETURN;
    END IF;

    INSERT INTO queries (query_id, account_id, integration_id, site_id, site_geometry, radius_m, layer_ids,
            include_geometry, frozen_refs, status, created_at, attempts, started_at, outcome, result_key, result_bytes, result_count,
            computed_at, expires_at)
        VALUES (p_query_id, siteenv_admit_answered.account_id, siteenv_admit_answered.integration_id, siteenv_admit_answered.site_id, coalesce(siteenv_admit_answered.site_geometry, p_site_geometry), p_radius_m, p_layer_ids,
            p_include_geometry, p_frozen_refs, p_status, p_created_at, 1, p_created_at, p_outcome, p_result_key, p_result_bytes, p_result_count,
            p_computed_at, p_expires_at);
    stored := p_status;
    IF siteenv_admit_answered.site_id <> p_site_id THEN
        UPDATE idempotency i SET body = convert_to(replace(convert_from(i.body, 'UTF8'), p_site_id::text, siteenv_admit_answered.site_id::text), 'UTF8')
            WHERE i.integration_id = siteenv_admit_answered.integration_id AND i.idem_key = p_idem_key;
    END IF;
    INSERT INTO activity (activity_id, account_id, integration_id, operation, outcome, request_id,
            http_status, error_code, resource_type, resource_id, created_at)
        VALUES (p_activity_id, siteenv_admit_answered.account_id, siteenv_admit_answered.integration_id, p_act_operation, p_act_outcome, p_request_id,
            p_http_status, p_error_code, p_resource_type, p_resource_id, p_created_at);
END $$;
