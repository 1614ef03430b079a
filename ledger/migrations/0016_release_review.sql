-- Staged releases and their review. A release may be published without
-- becoming current (siteenv ingest --stage) and any release of a layer may
-- be made current again (siteenv release promote, also the rollback).
-- Releases stay immutable: what happened to them is an append-only audit,
-- one row per change of a layer's current release or per staged insert.
CREATE TABLE release_events (
    event_id            bigserial PRIMARY KEY,
    layer_id            text NOT NULL,
    release_id          text NOT NULL,
    action              text NOT NULL CHECK (action IN ('published', 'staged', 'promoted')),
    -- the layer's current release just before (NULL: none)
    previous_release_id text,
    actor               text NOT NULL,
    created_at          timestamptz NOT NULL,
    FOREIGN KEY (layer_id, release_id) REFERENCES releases (layer_id, release_id)
);
CREATE INDEX release_events_layer ON release_events (layer_id, event_id);

-- Every release published before this migration was made current when it
-- was published.
INSERT INTO release_events (layer_id, release_id, action, previous_release_id, actor, created_at)
SELECT layer_id, release_id, 'published', NULL, 'migration 0016', published_at
FROM releases ORDER BY published_at, release_id;
