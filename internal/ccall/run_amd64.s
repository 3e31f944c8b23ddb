#include "textflag.h"

GLOBL ·runBatchABI0(SB), NOPTR|RODATA, $8
DATA ·runBatchABI0(SB)/8, $runBatch(SB)

// runBatch(DI = words): words[0] is the next call, words[1] the number of calls, words[2] receives each
// call's return value; entries of 13 words (function, 12 arguments) follow the 3 header words. It stops at
// the first call whose 32-bit status is not 0, leaving words[0] at that call.
//
// Frame: 0-47(SP) the stack arguments 7-12, 48(SP) words. With the frame pointer the frame is 72 bytes, so
// SP stays 16-byte aligned at each CALL as the C ABI requires.
TEXT runBatch(SB), NOSPLIT, $64
	MOVQ DI, 48(SP)

next:
	MOVQ 48(SP), R11
	MOVQ 0(R11), CX
	CMPQ CX, 8(R11)
	JAE  done
	IMUL3Q $104, CX, CX
	LEAQ 24(R11)(CX*1), R10

	MOVQ 56(R10), AX
	MOVQ AX, 0(SP)
	MOVQ 64(R10), AX
	MOVQ AX, 8(SP)
	MOVQ 72(R10), AX
	MOVQ AX, 16(SP)
	MOVQ 80(R10), AX
	MOVQ AX, 24(SP)
	MOVQ 88(R10), AX
	MOVQ AX, 32(SP)
	MOVQ 96(R10), AX
	MOVQ AX, 40(SP)

	MOVQ 8(R10), DI
	MOVQ 16(R10), SI
	MOVQ 24(R10), DX
	MOVQ 32(R10), CX
	MOVQ 40(R10), R8
	MOVQ 48(R10), R9
	MOVQ 0(R10), R10
	XORL AX, AX // no vector registers used, should fn be variadic
	CALL R10

	MOVQ 48(SP), R11
	MOVQ AX, 16(R11)
	TESTL AX, AX
	JNE  done
	INCQ 0(R11)
	JMP  next

done:
	RET
