-- siteenv_require ends the caller's transaction with SQLSTATE SEA01 (its
-- message names the check) unless ok is true. POST /queries' admission is
-- one pipelined transaction (ledger.AdmitQueryBatch): each of its checks
-- (the idempotency claim is fresh, the site exists, its sections are
-- granted) is a statement of this function, so a failed check undoes every
-- write before it, and the request then takes the step-by-step path, which
-- answers exactly as before. A plpgsql call, not an SQL expression, so that
-- nothing is evaluated when the plan is made.
CREATE FUNCTION siteenv_require(ok boolean, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'SEA01', MESSAGE = 'admission check failed: ' || what;
    END IF;
END $$;
