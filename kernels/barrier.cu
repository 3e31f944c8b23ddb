// barrier.cu: SPEC section 5's cross-GPU barrier, per block. Block b of every rank tells block b of every peer
// that it arrived (flag = its epoch, stored with release at system scope into the peer's mailbox, one word per
// source rank), then waits until every peer's flag in its own mailbox has reached the same epoch (acquire).
// Epochs only grow and persist across launches, so nothing is reset between calls; a peer may already be one
// epoch ahead, hence "at least". The block's writes before the barrier are ordered before the release store by
// the block barrier (release is cumulative), so a peer that passes the barrier sees them.

RX_DEV bool barrier(Comm& c, int step) {
  c.epoch++;
  block_sync();
  bool ok = true;
  int t = threadIdx.x;
  if (t < c.n) {
    st_release_sys(c.mailbox(t, c.r), c.epoch);
    ok = c.wait_geq(c.mailbox(c.r, t), c.epoch, RX_PH_BARRIER << 16 | step);
  }
  return !block_any(!ok);
}

// A barrier on its own (the engine's tests time and exercise it).
RX_KERNEL rx_barrier(Args a) {
  RX_COMM(c, a);
  if (barrier(c, 1)) c.save();
}
