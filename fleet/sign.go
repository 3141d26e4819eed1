package fleet

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// A signed record is the record's JSON object with one last member,
// "sig": the hex HMAC-SHA256 of the object without it, under a key derived
// from Config.Key. Only a holder of the security key can then add a
// member to the view or change one's addresses, and a reader that knows
// nothing of signatures still reads the record as JSON.

var sigStart = []byte(`,"sig":"`)

// sigLen is the length of the signature member with the closing brace.
const sigLen = len(`,"sig":"`) + 2*sha256.Size + len(`"}`)

// recordKey derives the key that signs records from the security key, so
// that the security key itself signs nothing else of the fleet's.
func recordKey(key []byte) []byte {
	if len(key) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("muster fleet node record v1"))
	return m.Sum(nil)
}

func recordMAC(key, record []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(record)
	return m.Sum(nil)
}

// sign returns the JSON object record signed with key, or record as it is
// without a key.
func sign(key, record []byte) []byte {
	if key == nil || len(record) < 2 || record[len(record)-1] != '}' {
		return record
	}
	out := make([]byte, 0, len(record)-1+sigLen)
	out = append(out, record[:len(record)-1]...)
	out = append(out, sigStart...)
	out = hex.AppendEncode(out, recordMAC(key, record))
	return append(out, `"}`...)
}

// verify returns the record data carries when its signature is key's.
// Without a key every record is taken, signed or not.
func verify(key, data []byte) ([]byte, bool) {
	n := len(data)
	hasSig := n > sigLen && bytes.Equal(data[n-sigLen:n-sigLen+len(sigStart)], sigStart) && bytes.HasSuffix(data, []byte(`"}`))
	if !hasSig {
		return data, key == nil
	}
	record := make([]byte, 0, n-sigLen+1)
	record = append(append(record, data[:n-sigLen]...), '}')
	if key == nil {
		return record, true
	}
	got := make([]byte, sha256.Size)
	if _, err := hex.Decode(got, data[n-sigLen+len(sigStart):n-2]); err != nil {
		return nil, false
	}
	if !hmac.Equal(got, recordMAC(key, record)) {
		return nil, false
	}
	return record, true
}
