//! Criterion bench of durability on a 1M-record, 12-column grid branch (`GridState`):
//! - `snapshot_copy`: the copy a grid actor takes before writing a snapshot: the only time a
//!   snapshot holds up the branch's writers (the longest write stall during a snapshot);
//! - `snapshot_image`: encoding the sectioned image into one buffer (off the actor thread);
//! - `snapshot_sections`: the same sections streamed to a sink, as a snapshot streams them to
//!   its file (the encoding alone, without the image's buffer or the file);
//! - `recovery_decode`: validated rkyv access + rebuilding the branch from the image (the
//!   snapshot part of a restart; the WAL tail after it is at most one snapshot period).

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use gridd::grid::image::PartLimits;
use gridd::grid::ops::GridState;

mod common;
use common::build_state;

const RECORDS: usize = 1_000_000;

fn main() {
    let (state, _) = build_state(RECORDS);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();

    c.bench_function("snapshot_copy_1m", |b| b.iter(|| black_box(state.clone())));
    let mut encoded = rkyv::util::AlignedVec::<16>::new();
    encoded.extend_from_slice(&state.encode_image(PartLimits::DEFAULT).expect("encodes"));
    eprintln!("snapshot image of {RECORDS} records: {} MiB", encoded.len() / (1 << 20));
    c.bench_function("snapshot_image_1m", |b| {
        b.iter(|| black_box(state.encode_image(PartLimits::DEFAULT).expect("encodes")))
    });
    c.bench_function("snapshot_sections_1m", |b| {
        b.iter(|| {
            let written = state.write_image(PartLimits::DEFAULT, None, &mut std::io::sink());
            black_box(written.expect("encodes").written)
        })
    });
    c.bench_function("recovery_decode_1m", |b| {
        b.iter(|| black_box(GridState::decode_image(&encoded, &[]).expect("decodes")))
    });

    c.final_summary();
}
