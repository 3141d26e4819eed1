package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// serverCredential is what the key file holds.
type serverCredential struct {
	NodeID    string `json:"node_id"`
	ServerID  string `json:"server_id"`
	ServerKey string `json:"server_key"`
}

// ensureJoined loads the server key from KeyFile, or joins and saves it.
func (n *Node) ensureJoined(ctx context.Context) error {
	cred, err := n.loadKey()
	if err != nil {
		return err
	}
	if cred == nil {
		if n.cfg.NodeKey == "" {
			return fmt.Errorf("%w: NodeKey is required: %s holds no server key", ErrInvalidConfig, n.cfg.KeyFile)
		}
		if cred, err = n.joinWithRetry(ctx); err != nil {
			return err
		}
		if err := n.saveKey(cred); err != nil {
			return err
		}
		n.log.Info("federation: joined home", "node_id", cred.NodeID, "server_id", cred.ServerID)
	}
	n.mu.Lock()
	n.cred = cred
	n.mu.Unlock()
	return nil
}

func (n *Node) joinWithRetry(ctx context.Context) (*serverCredential, error) {
	attempt := 0
	for logged := false; ; {
		cred, err := n.join(ctx)
		if err == nil {
			return cred, nil
		}
		if fatal(err) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooManyServers) {
			return nil, fmt.Errorf("join: %w", err)
		}
		if !logged {
			n.log.Warn("federation: cannot join home yet; retrying", "err", err)
			logged = true
		}
		t := time.NewTimer(backoff(attempt, n.cfg.AnnounceEvery))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		attempt++
	}
}

func (n *Node) join(ctx context.Context) (*serverCredential, error) {
	hw := n.cfg.Hardware()
	req := joinRequest{Name: n.cfg.Name, Hardware: hw}
	if req.Name == "" {
		req.Name = clip(hw.Hostname, maxLabel)
	}
	var res joinResponse
	if err := n.postJSON(ctx, PathJoin, n.cfg.NodeKey, req, &res); err != nil {
		return nil, err
	}
	// The key file keeps the ids and every later request carries them.
	if !validKeyFormat(res.ServerKey, kindServer) || !validID(res.ServerID) || !validID(res.NodeID) {
		return nil, fmt.Errorf("join: home answered without a valid server key")
	}
	return &serverCredential{NodeID: res.NodeID, ServerID: res.ServerID, ServerKey: res.ServerKey}, nil
}

// loadKey reads KeyFile: nil when it does not exist.
func (n *Node) loadKey() (*serverCredential, error) {
	data, err := os.ReadFile(n.cfg.KeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	var cred serverCredential
	if err := json.Unmarshal(data, &cred); err != nil || !validKeyFormat(cred.ServerKey, kindServer) {
		return nil, fmt.Errorf("key file %s holds no server key; remove it to enrol again", n.cfg.KeyFile)
	}
	if fi, err := os.Stat(n.cfg.KeyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(n.cfg.KeyFile, 0o600); err != nil {
			return nil, fmt.Errorf("key file %s is readable by others and cannot be made private: %w", n.cfg.KeyFile, err)
		}
		n.log.Warn("federation: key file was readable by others; made it 0600", "path", n.cfg.KeyFile)
	}
	return &cred, nil
}

// saveKey writes the key file atomically with mode 0600.
func (n *Node) saveKey(cred *serverCredential) error {
	data, err := json.MarshalIndent(cred, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(n.cfg.KeyFile)
	f, err := os.CreateTemp(dir, ".server-key-*") // created 0600
	if err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, n.cfg.KeyFile)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write key file (server %s joined; revoke it at home): %w", cred.ServerID, err)
	}
	return nil
}
