// Module basemapgen is the one-off generator of ../../au.bin. It is a module of
// its own so that rgeo (and its ~29 MB of embedded data) never enters the
// siteenv module graph or binary.
module siteenv/geo/austates/internal/gen

go 1.26.8

require (
	github.com/paulmach/orb v0.14.0
	github.com/sams96/rgeo v1.2.0
)

require (
	github.com/golang/geo v0.0.0-20200730024412-e86565bf3f35 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/twpayne/go-geom v1.4.4 // indirect
	go.mongodb.org/mongo-driver/v2 v2.5.0 // indirect
)
