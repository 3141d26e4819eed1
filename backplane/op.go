package backplane

// Op names one operation of a backplane, for the Hooks of Wrap: a method
// of Backplane other than Close, or of an optional interface.
type Op uint8

// The operations, each named after the method it stands for.
const (
	OpHeartbeat Op = iota
	OpNodes
	OpLeave
	OpClaim
	OpClaimUnique
	OpReassert
	OpRelease
	OpLocate
	OpArrive
	OpPutHandoff
	OpTakeHandoff
	OpConfirmHandoff
	OpIncrement
	OpPutRecord
	OpRecord
	OpDeleteRecord
	OpRecords
	OpSwapRecords
)

// opNames are the method names, indexed by Op.
var opNames = [...]string{
	OpHeartbeat:      "Heartbeat",
	OpNodes:          "Nodes",
	OpLeave:          "Leave",
	OpClaim:          "Claim",
	OpClaimUnique:    "ClaimUnique",
	OpReassert:       "Reassert",
	OpRelease:        "Release",
	OpLocate:         "Locate",
	OpArrive:         "Arrive",
	OpPutHandoff:     "PutHandoff",
	OpTakeHandoff:    "TakeHandoff",
	OpConfirmHandoff: "ConfirmHandoff",
	OpIncrement:      "Increment",
	OpPutRecord:      "PutRecord",
	OpRecord:         "Record",
	OpDeleteRecord:   "DeleteRecord",
	OpRecords:        "Records",
	OpSwapRecords:    "SwapRecords",
}

// String returns the name of op's method, such as "ClaimUnique".
func (op Op) String() string {
	if int(op) < len(opNames) {
		return opNames[op]
	}
	return "Op(invalid)"
}

// Ops returns every operation, in the order of the constants, so that a
// decorator can set up per-operation state (an array indexed by Op) once.
func Ops() []Op {
	ops := make([]Op, len(opNames))
	for i := range ops {
		ops[i] = Op(i)
	}
	return ops
}
