// comm.cuh: the kernel arguments, the layout of each rank's peer-visible buffer, and the per-block state every
// collective kernel starts from. gpuengine/layout.go mirrors the RX_ numbers below (a test compares them).

// Args is every kernel's single by-value parameter (gpuengine.kernelArgs, 8-byte fields only).
struct Args {
  u64 send, recv;     // element pointers of this rank's call
  i64 count;          // elements: all_reduce N; all_gather, reduce_scatter, alltoall the per-rank piece
  i64 rank, nranks;   // global rank and rank count
  u64 peers;          // u64[nranks]: every rank's peer-visible buffer, as this rank addresses it
  u64 self;           // this rank's own buffer (peers[rank]): its counters load while the table does
  u64 abort;          // u32 in host-mapped memory: set by the host when a wait must give up
  u64 status;         // u32 in host-mapped memory: the phase this rank was stuck in when it gave up
  i64 half;           // bytes of one of the two data halves
  i64 x0, x1, x2, x3; // kernel-specific (round offset and length, LP block and mode)
};
#define RX_ARGS_BYTES 112
static_assert(sizeof(Args) == RX_ARGS_BYTES, "Args layout");

#define RX_MAXB 160           // most blocks per kernel: room for one on every SM of a GPU
#define RX_MAXR 64            // most ranks in a barrier
#define RX_NSLOTS 8           // ring FIFO depth per block
#define RX_SLOT_BYTES 65536   // ring message size
#define RX_CTRL_BYTES 131072  // control words at the start of the buffer
#define RX_LL_MAXR 16         // LL source slots of a half (ll.cu)
#define RX_LL_BYTES 524288    // the most data of one LL source slot (4 data bytes per 8-byte LL word)
#define RX_LL128_MAXR 2          // LL128 source slots of a half (ll128.cu: 2 ranks)
#define RX_LL128_SLOT 2097152    // bytes of one LL128 source slot: 128-byte lines of 120 data bytes

#define RX_OFF_MAILBOX 0                                      // u64[MAXB][MAXR] barrier flags, by source rank
#define RX_OFF_HEAD (RX_OFF_MAILBOX + RX_MAXB * RX_MAXR * 8)  // u64[MAXB][NSLOTS] ring: message seq, from prev
#define RX_OFF_TAIL (RX_OFF_HEAD + RX_MAXB * RX_NSLOTS * 8)   // u64[MAXB], 128 B apart: ring: consumed, from next
#define RX_OFF_PRIV (RX_OFF_TAIL + RX_MAXB * 128)             // u64[4][MAXB]: this rank's own counters
#define RX_OFF_LL RX_CTRL_BYTES                               // LL words [2 halves][LL_MAXR sources][LL_BYTES/4]
#define RX_OFF_LL128 (RX_OFF_LL + 2 * RX_LL_MAXR * 2 * RX_LL_BYTES)     // LL128 lines [2 halves][LL128_MAXR][]
#define RX_OFF_FIFO (RX_OFF_LL128 + 2 * RX_LL128_MAXR * RX_LL128_SLOT)  // [MAXB][NSLOTS] ring slots
#define RX_OFF_DATA (RX_OFF_FIFO + RX_MAXB * RX_NSLOTS * RX_SLOT_BYTES)  // two halves of Args.half bytes
static_assert(RX_OFF_PRIV + 4 * RX_MAXB * 8 <= RX_CTRL_BYTES, "control area");

// Private counters, per block index: they persist across launches (graph replays included), so nothing is
// reset between calls.
#define RX_EPOCH 0   // barriers passed
#define RX_SENT 1    // ring messages sent
#define RX_RECVD 2   // ring messages received
#define RX_LAUNCH 3  // data-half launches: the parity picks the half

// Phase codes reported through Args.status: kind << 16 | step (gpuengine/phase.go names them).
#define RX_PH_BARRIER 1
#define RX_PH_RING_RECV 2
#define RX_PH_RING_SEND 3
#define RX_PH_LL_RECV 4
#define RX_ABORT_POLL 1024  // spins between looks at the host-mapped abort flag

RX_DEV i64 cdiv(i64 a, i64 b) { return (a + b - 1) / b; }
RX_DEV i64 roundup(i64 a, i64 b) { return cdiv(a, b) * b; }
RX_DEV i64 clamp0(i64 v, i64 hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

// Visits the ranks starting after this one, so that blocks of different ranks spread over different links.
#define RX_FOR_PEERS(c, q) for (int q##k = 1, q = (c.r + 1) % c.n; q##k <= c.n; q##k++, q = (q + 1) % c.n)

struct Comm {
  Args a;
  int n, r, b;
  u64 epoch, sent, recvd, launch;
  u8** peer;  // shared-memory copy of the peer table

  RX_DEV u8* self() const { return (u8*)a.self; }
  RX_DEV u64* priv(int k) const { return (u64*)(self() + RX_OFF_PRIV) + k * RX_MAXB; }
  RX_DEV u64* mailbox(int owner, int from) const {
    return (u64*)(peer[owner] + RX_OFF_MAILBOX) + (b * RX_MAXR + from);
  }
  RX_DEV u8* data(int owner, int h) const { return peer[owner] + RX_OFF_DATA + h * a.half; }

  // Waits until *p >= want (polling relaxed, then one acquire), looking at the abort flag now and then. On
  // abort it records the phase and returns false.
  RX_DEV bool wait_geq(const u64* p, u64 want, u32 phase) const {
    int spins = 0;
    while (ld_relaxed_sys(p) < want || ld_acquire_sys(p) < want) {
      if (++spins == RX_ABORT_POLL) {
        spins = 0;
        if (ld_volatile((const u32*)a.abort)) {
          *(volatile u32*)a.status = phase;
          return false;
        }
      }
    }
    return true;
  }

  // Sub-range [lo, hi) of this block when len elements are split over the grid in units of unit elements.
  RX_DEV void part(i64 len, i64 unit, i64& lo, i64& hi) const {
    i64 sub = roundup(cdiv(len, gridDim.x), unit);
    lo = sub * b < len ? sub * b : len;
    hi = lo + sub < len ? lo + sub : len;
  }

  // The number of data-half launches before this one (the same on every rank and block), moved on for the
  // next; call once per launch, first thing. Its parity is the launch's data half. RX_COMM read the counter
  // before its block barrier, so every thread has it before any stores the next value.
  RX_DEV u64 next_launch() {
    u64 l = launch;
    // Block b also keeps the counters of the block indices this grid lacks that share its residue (a later
    // launch may have more blocks), a store per thread.
    for (int j = b + (int)(threadIdx.x * gridDim.x); j < RX_MAXB; j += (int)(blockDim.x * gridDim.x)) priv(RX_LAUNCH)[j] = l + 1;
    return l;
  }
  RX_DEV int next_half() { return (int)(next_launch() & 1); }

  // Writes the counters back for the next launch.
  RX_DEV void save() {
    if (threadIdx.x == 0) {
      priv(RX_EPOCH)[b] = epoch;
      priv(RX_SENT)[b] = sent;
      priv(RX_RECVD)[b] = recvd;
    }
  }
};

// Every kernel's first statement (after grid_dep_sync in one launched early): the peer table goes to shared memory, the counters to registers. The
// counters' loads do not wait for the table's (Args.self), so a small kernel pays one memory latency, not two.
#define RX_COMM(c, args)                                                    \
  __shared__ u8* rx_peers[RX_MAXR];                                         \
  Comm c;                                                                   \
  c.a = args;                                                               \
  c.n = (int)args.nranks;                                                   \
  c.r = (int)args.rank;                                                     \
  c.b = blockIdx.x;                                                         \
  c.epoch = c.priv(RX_EPOCH)[c.b];                                          \
  c.sent = c.priv(RX_SENT)[c.b];                                            \
  c.recvd = c.priv(RX_RECVD)[c.b];                                          \
  c.launch = c.priv(RX_LAUNCH)[c.b];                                        \
  for (int i = threadIdx.x; i < c.n; i += blockDim.x) rx_peers[i] = ((u8**)args.peers)[i]; \
  block_sync();                                                             \
  c.peer = rx_peers
