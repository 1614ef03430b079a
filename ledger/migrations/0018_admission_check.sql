-- siteenv_check is siteenv_require (0013) returning true, so that a check
-- can be a column of the statement that reads what it checks: POST
-- /queries' admission reads the key's principal, claims the idempotency
-- key and reads the site each in one statement with its check, instead of
-- a statement for the read and another for the check.
CREATE FUNCTION siteenv_check(ok boolean, what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM siteenv_require(ok, what);
    RETURN true;
END $$;
