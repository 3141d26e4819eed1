// Package compose runs the fleet recipe as its users run it:
// docker-compose.yml and the Dockerfile on a real Docker engine, scaled up
// and down under load, its Redis restarted and a server killed
// (TestComposeScale), with the README's own commands (TestComposeReadme).
//
// Only tests live here. What cannot be fetched on a machine without an
// image registry, the official base images, is swapped for local builds
// from Debian packages (dockertest.BaseImages) through the recipe's
// variables; every other part is the user's.
package compose
