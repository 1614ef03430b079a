#!/usr/bin/env bash
# Regenerates the publisher fixtures from the GDA2020 features in
# polygons.geojson, lines.geojson and points.geojson (longitude, latitude,
# EPSG:7844), with GDAL's ogr2ogr (apt-get install gdal-bin):
#   cd ingest/testdata/publishers && bash gen.sh
# Shapefiles and GeoPackages in GDA2020 (7844, for the round trips), in
# GDA94 geographic (4283) and MGA94 zone 56 (28356) (for the 1 mm checks),
# a zipped Shapefile, a Latin-1 one with a .cpg and one in GDAL's default
# encoding (Latin-1 marked by the dBASE language driver id, no .cpg). ogr2ogr moves GDA2020 to GDA94 with
# PROJ's EPSG:8048 Helmert (no grid installed).
set -euo pipefail
export LC_ALL=C
rm -rf shp gpkg zip && mkdir shp gpkg zip
for crs in 7844 4283 28356; do
	for layer in polygons lines points; do
		ogr2ogr -f "ESRI Shapefile" -lco ENCODING=UTF-8 -s_srs EPSG:7844 -t_srs "EPSG:$crs" "shp/${layer}_$crs.shp" "$layer.geojson" -nln "${layer}_$crs"
		update=; [ -f "gpkg/publishers_$crs.gpkg" ] && update=-update
		ogr2ogr -f GPKG -lco SPATIAL_INDEX=NO $update -s_srs EPSG:7844 -t_srs "EPSG:$crs" "gpkg/publishers_$crs.gpkg" "$layer.geojson" -nln "$layer"
	done
done
ogr2ogr -f "ESRI Shapefile" -s_srs EPSG:7844 -t_srs EPSG:7844 -lco ENCODING=ISO-8859-1 shp/polygons_latin1.shp polygons.geojson -nln polygons_latin1
# GDAL's default encoding: Latin-1 text with language driver id 87, no .cpg.
ogr2ogr -f "ESRI Shapefile" -s_srs EPSG:7844 -t_srs EPSG:7844 shp/polygons_ldid.shp polygons.geojson -nln polygons_ldid
(cd shp && zip -q -X ../zip/polygons_28356.zip polygons_28356.*)
