package federation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// NodeSpec describes a node for Home.CreateNode.
type NodeSpec struct {
	// ID names the node, such as "au-sydney": 1-63 characters of a-z, 0-9
	// and '-'. Required.
	ID string `json:"id"`
	// Name is a label for people. Default the ID.
	Name string `json:"name,omitempty"`
	// Country is the ISO 3166-1 alpha-2 code of the country whose players
	// the node serves, such as "AU". Required.
	Country string `json:"country"`
	// Region is a free label for the region list, such as "Oceania".
	Region string `json:"region,omitempty"`
}

// Hardware is a server's hardware report.
type Hardware struct {
	// OS and Arch are runtime.GOOS and runtime.GOARCH.
	OS   string `json:"os,omitempty"`
	Arch string `json:"arch,omitempty"`
	// CPUs is the number of logical CPUs.
	CPUs int `json:"cpus,omitempty"`
	// MemoryBytes is the machine's total memory.
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// Hostname is the machine's host name.
	Hostname string `json:"hostname,omitempty"`
	// Kernel is the kernel release, on Linux.
	Kernel string `json:"kernel,omitempty"`
	// GoVersion is the Go version the agent was built with.
	GoVersion string `json:"go_version,omitempty"`
}

// SelfTestResult is one bandwidth self-test as home measured it.
type SelfTestResult struct {
	// At is when home received the upload.
	At time.Time `json:"at"`
	// Bytes is how much was uploaded.
	Bytes int64 `json:"bytes"`
	// BytesPerSecond is the measured upload rate.
	BytesPerSecond float64 `json:"bytes_per_second"`
	// Passed reports a complete upload at no less than the minimum rate.
	Passed bool `json:"passed"`
}

// NodeInfo is a node's register entry as the admin sees it.
type NodeInfo struct {
	// ID, Name, Country and Region are as created (see NodeSpec).
	ID      string `json:"id"`
	Name    string `json:"name"`
	Country string `json:"country"`
	Region  string `json:"region,omitempty"`
	// Approved reports an admin's approval; Revoked is final.
	Approved bool `json:"approved"`
	Revoked  bool `json:"revoked"`
	// InRotation reports that the node is in the regions list now.
	InRotation bool `json:"in_rotation"`
	// CreatedAt, ApprovedAt and RevokedAt are when those happened; zero
	// when they have not.
	CreatedAt  time.Time `json:"created_at"`
	ApprovedAt time.Time `json:"approved_at,omitzero"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	// Servers are the servers the node enrolled, revoked ones included,
	// sorted by id.
	Servers []ServerInfo `json:"servers"`
}

// ServerInfo is one server of a node as the admin sees it.
type ServerInfo struct {
	// ID is the server's id, given by home at join: "<node>-<8 hex>".
	ID string `json:"id"`
	// NodeID is the node that enrolled it.
	NodeID string `json:"node_id"`
	// Name is the label the server joined with (default its host name).
	Name string `json:"name"`
	// Revoked reports that the server's key is refused.
	Revoked bool `json:"revoked"`
	// Fresh reports that the server counts towards rotation now: not
	// revoked, announced within SilentAfter, self-test not overdue.
	Fresh bool `json:"fresh"`
	// JoinedAt and RevokedAt are when the server joined and was revoked.
	JoinedAt  time.Time `json:"joined_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// LastSeen is the server's last announce; zero before the first.
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Services and Hardware are what the last announce reported.
	Services map[string]string `json:"services,omitempty"`
	Hardware Hardware          `json:"hardware"`
	// SelfTestDue is when the next self-test is due.
	SelfTestDue time.Time `json:"self_test_due,omitzero"`
	// SelfTest is the latest self-test, passed or not.
	SelfTest *SelfTestResult `json:"self_test,omitempty"`
	// Rooms and Players count the open rooms the server reports and their
	// members (zero once the server is dead).
	Rooms   int `json:"rooms"`
	Players int `json:"players"`
}

// Region is one node in rotation, as GET /api/v1/regions lists it.
type Region struct {
	// Node is the node's id.
	Node string `json:"node"`
	// Name, Country and Region describe the node (see NodeSpec).
	Name    string `json:"name"`
	Country string `json:"country"`
	Region  string `json:"region,omitempty"`
	// Services are the addresses the node's fresh servers announced, by
	// service name, sorted.
	Services map[string][]string `json:"services"`
	// Servers is the number of fresh servers.
	Servers int `json:"servers"`
	// Rooms and Players count the open rooms the node's live servers
	// reported and their members.
	Rooms   int `json:"rooms"`
	Players int `json:"players"`
}

// RegionList is the body of GET /api/v1/regions.
type RegionList struct {
	// Home lists home's own services (HomeConfig.Services).
	Home map[string]string `json:"home"`
	// Regions are the nodes in rotation, sorted by country and node id.
	Regions []Region `json:"regions"`
}

// RoomReport is the whole state of one room on a node: who is in it and
// its properties. A node sends one on every change; home keeps the latest.
type RoomReport struct {
	// RoomID names the room (ids are home's, so unique everywhere).
	RoomID string `json:"room_id"`
	// Members are the ids of the players in the room.
	Members []string `json:"members"`
	// Properties are the room's properties.
	Properties map[string]string `json:"properties,omitempty"`
	// Closed reports that the room has ended; home forgets it.
	Closed bool `json:"closed,omitempty"`
}

// RoomSnapshot is the latest report home holds for a room.
type RoomSnapshot struct {
	RoomReport
	// NodeID and ServerID are who reported the room (from the key).
	NodeID   string `json:"node_id"`
	ServerID string `json:"server_id"`
	// Seq is the agent's sequence number of the report.
	Seq uint64 `json:"seq"`
	// UpdatedAt is when home stored it.
	UpdatedAt time.Time `json:"updated_at"`
}

// Announcement is home's answer to an announce.
type Announcement struct {
	// NodeID and ServerID are who home took the announce from.
	NodeID   string `json:"node_id"`
	ServerID string `json:"server_id"`
	// Approved reports whether the node is approved; an unapproved node's
	// servers may announce and self-test but are not in rotation.
	Approved bool `json:"approved"`
	// Fresh reports whether this server now counts towards its node's
	// rotation (false while its self-test is overdue). The node is in the
	// regions list when it is Approved and at least one server is Fresh.
	Fresh bool `json:"fresh"`
	// AnnounceEverySeconds is home's announce interval.
	AnnounceEverySeconds float64 `json:"announce_every_seconds"`
	// SelfTest says when the next bandwidth self-test is due.
	SelfTest SelfTestSchedule `json:"self_test"`
}

// SelfTestSchedule is home's timing of a server's self-test.
type SelfTestSchedule struct {
	// DueInSeconds is the time until the test is due; zero or less means
	// now. It is relative so that clock skew does not matter.
	DueInSeconds float64 `json:"due_in_seconds"`
	// Bytes is how much to upload.
	Bytes int64 `json:"bytes"`
}

// Requests and the join answer.

type joinRequest struct {
	Name     string   `json:"name"`
	Hardware Hardware `json:"hardware"`
}

type joinResponse struct {
	NodeID               string  `json:"node_id"`
	ServerID             string  `json:"server_id"`
	ServerKey            string  `json:"server_key"`
	AnnounceEverySeconds float64 `json:"announce_every_seconds"`
}

type announceRequest struct {
	// NodeID may be sent; it must then be the key's own node.
	NodeID   string            `json:"node_id,omitempty"`
	Services map[string]string `json:"services"`
	Hardware Hardware          `json:"hardware"`
	// Epoch is the first sequence number of this run of the agent: room
	// reports of the server with a lower sequence number are from an
	// earlier run, whose rooms ended with it.
	Epoch uint64 `json:"epoch,omitempty"`
}

type roomRequest struct {
	NodeID string `json:"node_id,omitempty"`
	RoomReport
	// Seq orders the reports of a room: one with a seq no higher than the
	// stored one's is ignored. Without it (0, as a plain game server
	// reports), home orders reports by their arrival.
	Seq uint64 `json:"seq,omitempty"`
}

type roomResponse struct {
	// Stored is false when home holds a newer report for the room.
	Stored bool `json:"stored"`
}

type selfTestResponse struct {
	SelfTestResult
	NextDueInSeconds float64 `json:"next_due_in_seconds"`
}

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// decodeJSON decodes exactly one JSON value from data into v. An empty
// body decodes as {}. Unknown fields are ignored, so that an agent newer
// than home still gets through.
func decodeJSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("%w: field %s: expected %s", ErrInvalid, te.Field, te.Type)
		case errors.As(err, &se):
			return fmt.Errorf("%w: malformed JSON at byte %d", ErrInvalid, se.Offset)
		}
		return fmt.Errorf("%w: malformed JSON: %v", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON value", ErrInvalid)
	}
	return nil
}

func decodeJoin(data []byte) (joinRequest, error) {
	var req joinRequest
	if err := decodeJSON(data, &req); err != nil {
		return req, err
	}
	if req.Name != "" {
		if err := checkLabel("name", req.Name); err != nil {
			return req, err
		}
	}
	return req, req.Hardware.validate()
}

func decodeAnnounce(data []byte) (announceRequest, error) {
	var req announceRequest
	if err := decodeJSON(data, &req); err != nil {
		return req, err
	}
	if err := validateServices(req.Services); err != nil {
		return req, err
	}
	return req, req.Hardware.validate()
}

func decodeRoomReport(data []byte) (roomRequest, error) {
	var req roomRequest
	if err := decodeJSON(data, &req); err != nil {
		return req, err
	}
	return req, req.RoomReport.validate()
}

func decodeNodeSpec(data []byte) (NodeSpec, error) {
	var spec NodeSpec
	if err := decodeJSON(data, &spec); err != nil {
		return spec, err
	}
	return spec.validate()
}
