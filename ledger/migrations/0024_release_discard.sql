-- A staged release can be discarded after review (siteenv release discard,
-- or the review page): it stays in the catalogue and the store, immutable,
-- but is no longer offered for review; promoting it later is still allowed.
ALTER TABLE release_events DROP CONSTRAINT release_events_action_check;
ALTER TABLE release_events ADD CONSTRAINT release_events_action_check
    CHECK (action IN ('published', 'staged', 'promoted', 'discarded'));
