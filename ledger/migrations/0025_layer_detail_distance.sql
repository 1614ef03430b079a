-- A layer's detail distance (layer.json's detail_distance_m): its report
-- records within it print as record cards, those beyond as appendix rows.
-- NULL: the report uses its theme's default.
ALTER TABLE layers ADD COLUMN detail_distance_m double precision
    CHECK (detail_distance_m > 0 AND detail_distance_m <= radius_max_m);
