//go:build !race

package soak

// defaultPlayers is -players' default.
const defaultPlayers = 200
