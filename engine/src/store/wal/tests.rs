//! The WAL's unit tests: group commit, rolls, checkpoints, damage on open.
use super::*;
use crate::fs::StdFs;

fn pid(p: u32) -> PartitionId {
    ("orders".to_string(), p)
}

#[test]
fn entries_survive_reopen_and_checkpointed_segments_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    pollster::block_on(async {
        let (wal, cp, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
        assert!(cp.is_empty() && entries.is_empty());
        for i in 0..5u64 {
            let seq = wal
                .append(&pid((i % 2) as u32), b"k", &i.to_be_bytes())
                .unwrap();
            wal.sync_to(seq).await.unwrap();
        }
        drop(wal);
        let (wal, _, entries, report) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
        assert_eq!(entries.len(), 5);
        assert_eq!(report.corrupt_entries, 0);
        assert_eq!(entries[4].payload, 4u64.to_be_bytes());
        assert_eq!(entries[4].partition, pid(0));
        let before = wal.segment_count();
        assert!(before >= 2);
        let mut cp = BTreeMap::new();
        cp.insert(pid(0), Checkpoint { seq: 5, offset: 3 });
        cp.insert(pid(1), Checkpoint { seq: 5, offset: 2 });
        let deleted = wal.checkpoint(&cp).await.unwrap();
        assert_eq!(deleted.len(), before - 1, "all but the active segment");
        assert_eq!(wal.segment_count(), 1, "the deleted segments are forgotten");
        assert!(wal.checkpoint(&cp).await.unwrap().is_empty());
        drop(wal);
        let (_, cp2, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
        assert_eq!(cp2, cp);
        assert!(entries.is_empty());
    });
}

#[test]
fn seqs_a_checkpoint_passed_are_never_handed_out_again() {
    // Entries whose records were committed through the log are covered and a
    // checkpoint passes them, even when their WAL write never became durable (here:
    // never synced). After a reopen, a new entry must get a seq above the
    // checkpoint's, or the next replay would skip it as covered.
    let dir = tempfile::tempdir().unwrap();
    pollster::block_on(async {
        let (wal, _, _, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
        for i in 0..3u64 {
            wal.append(&pid(0), b"k", &[i as u8; 40]).unwrap();
        }
        let mut cp = BTreeMap::new();
        cp.insert(pid(0), Checkpoint { seq: 3, offset: 3 });
        wal.checkpoint(&cp).await.unwrap();
        drop(wal);
        let (wal, cp2, entries, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
        assert_eq!(cp2, cp);
        assert!(
            entries.is_empty(),
            "the unsynced entries never reached the disk"
        );
        let seq = wal.append(&pid(0), b"k", b"new").unwrap();
        assert!(seq >= 3, "seq {seq} reused below the checkpoint's 3");
        wal.sync_to(seq).await.unwrap();
        drop(wal);
        let (_, cp3, entries, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
        assert_eq!(entries.len(), 1);
        assert!(entries[0].seq >= cp3[&pid(0)].seq, "replay would skip it");
    });
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test corrupts a file behind the engine's back"
)]
fn a_corrupt_frame_in_an_old_segment_is_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    pollster::block_on(async {
        let (wal, _, _, _) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
        for i in 0..3u64 {
            let seq = wal.append(&pid(0), b"k", &[i as u8; 40]).unwrap();
            wal.sync_to(seq).await.unwrap();
        }
        drop(wal);
        let path = dir.path().join(segment_name(0));
        let mut bytes = std::fs::read(&path).unwrap();
        let frame_len = bytes.len() / 3;
        bytes[frame_len + 30] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let (_, _, entries, report) = Wal::open(StdFs, dir.path(), 1 << 20).await.unwrap();
        assert_eq!(
            entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![0, 2]
        );
        assert_eq!(report.corrupt_entries, 1);
    });
}

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the test writes a segment no engine path can write"
)]
fn a_copy_that_names_itself_or_a_later_entry_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    // Seqs 4..8 in one CRC-valid frame: a copy of 2 (fine), a plain entry, links
    // naming seq 6 (itself) and 9 (later), and a revival of 5.
    let records = [
        encode_record(&pid(0), b"k", b"a", Some(Link::Copy(2))),
        encode_record(&pid(0), b"k", b"b", None),
        encode_record(&pid(0), b"k", b"c", Some(Link::Copy(6))),
        encode_record(&pid(0), b"k", b"d", Some(Link::Revival(9))),
        encode_record(&pid(0), b"k", b"b", Some(Link::Revival(5))),
    ];
    let mut frame = Vec::new();
    Codecs::default()
        .encode_frame(
            Codec::None,
            4,
            records.iter().map(Vec::as_slice),
            &mut frame,
        )
        .unwrap();
    std::fs::write(dir.path().join(segment_name(4)), &frame).unwrap();
    let (_, _, entries, report) =
        pollster::block_on(Wal::open(StdFs, dir.path(), 1 << 20)).unwrap();
    let read: Vec<(u64, Option<Link>)> = entries.iter().map(|e| (e.seq, e.link)).collect();
    assert_eq!(
        read,
        [
            (4, Some(Link::Copy(2))),
            (5, None),
            (8, Some(Link::Revival(5)))
        ]
    );
    assert_eq!(report.corrupt_entries, 2);
}

#[test]
fn only_twenty_digits_and_the_suffix_name_a_segment() {
    assert_eq!(parse_segment_name(&segment_name(42)), Some(42));
    assert_eq!(parse_segment_name("00000000000000000042.wal"), Some(42));
    // A stray file in the WAL's directory is never taken for a segment.
    for name in [
        "42.wal",
        "0000000000000000004x.wal",
        "00000000000000000042.log",
        "",
    ] {
        assert_eq!(parse_segment_name(name), None, "{name:?}");
    }
}

#[test]
fn an_error_says_what_failed_and_why() {
    let poisoned = WalError::Poisoned("fsync failed".into()).to_string();
    assert_eq!(poisoned, "ingress WAL poisoned: fsync failed");
    let io = WalError::Io {
        op: "open segment",
        source: io::Error::from(io::ErrorKind::NotFound),
    };
    assert!(
        io.to_string()
            .starts_with("ingress WAL open segment failed: "),
        "{io}"
    );
}

/// Entries 0-3 of partition 0 and entry 4 of partition 1, synced one by one into
/// 64-byte segments: two entries a segment, so 2 and 3 share one.
async fn five_entries(dir: &std::path::Path) -> Wal<StdFs> {
    let (wal, _, _, _) = Wal::open(StdFs, dir, 64).await.unwrap();
    for i in 0..5u64 {
        let seq = wal
            .append(&pid(u32::from(i == 4)), b"k", &i.to_be_bytes())
            .unwrap();
        assert_eq!(seq, i);
        wal.sync_to(seq).await.unwrap();
    }
    wal
}

#[test]
fn a_segment_outlives_a_checkpoint_that_has_not_passed_its_last_entry() {
    // A checkpoint at seq 3 for partition 0 covers its entries 0-2: the segment
    // holding entry 3 must stay, whether its ends were counted at append or by the
    // open that found it (partition 1's checkpoint covers everything).
    for reopened in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        pollster::block_on(async {
            let mut wal = five_entries(dir.path()).await;
            if reopened {
                drop(wal);
                wal = Wal::open(StdFs, dir.path(), 64).await.unwrap().0;
            }
            let mut cp = BTreeMap::new();
            cp.insert(pid(0), Checkpoint { seq: 3, offset: 3 });
            cp.insert(pid(1), Checkpoint { seq: 5, offset: 1 });
            wal.checkpoint(&cp).await.unwrap();
            drop(wal);
            let (_, _, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
            let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
            assert!(seqs.contains(&3), "reopened={reopened}: {seqs:?}");
        });
    }
}

#[test]
// The test plants a stray file and reads it back behind the engine's back.
#[allow(clippy::disallowed_methods)]
fn a_segment_with_bytes_but_no_frame_is_never_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join(segment_name(7));
    std::fs::write(&junk, [0xAB; 10]).unwrap();
    pollster::block_on(async {
        let (wal, _, entries, report) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
        assert!(entries.is_empty());
        assert_eq!(report.skipped_bytes, 10);
        let seq = wal.append(&pid(0), b"k", b"v").unwrap();
        assert!(seq > 7, "seq {seq} reuses the junk segment's name");
        wal.sync_to(seq).await.unwrap();
        drop(wal);
        assert_eq!(std::fs::read(&junk).unwrap(), [0xAB; 10]);
        let (_, _, entries, _) = Wal::open(StdFs, dir.path(), 64).await.unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].seq, seq);
    });
}
