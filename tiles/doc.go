// Package tiles holds the immutable side of siteenv's data: the GeoParquet 1.1
// tile codec and the release manifests that describe a published release.
// Releases live in the object store of package store (file:// or s3://).
//
// Layout in the store:
//
//	releases/<layer_id>/<release_id>/manifest.json
//	releases/<layer_id>/<release_id>/tiles/<tile>.parquet
//
// Objects are never overwritten: store.Store.Put fails with store.ErrExists
// when the key is taken. A release is published by writing its tiles first
// and its manifest last, so a release whose manifest can be read is complete.
//
// The functions of this package (WriteTile, ReadTile, ReadGeoParquet,
// ParseManifest, ...) keep no shared state and are safe to call from
// multiple goroutines; decoded Tiles document their own concurrency.
package tiles
