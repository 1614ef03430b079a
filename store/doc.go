// Package store is siteenv's immutable object store: a directory tree
// (file://) or an S3 bucket (s3://) addressed by slash-separated keys.
//
// Each kind of object lives under its own prefix:
//
//	releases/<layer_id>/<release_id>/...      release manifests and tiles (package tiles)
//	results/...                               retained query results (package jobs)
//	artifacts/<account_id>/<artifact_id>/...  report artifacts (package artifacts)
//
// Objects are never overwritten: Store.Put fails with ErrExists when the key is
// taken. Only temporary objects (expired query results) are ever deleted.
//
// The stores are safe for concurrent use; see each type's documentation.
package store
