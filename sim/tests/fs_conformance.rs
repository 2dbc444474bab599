//! One set of filesystem behaviour checks, run against `SimFs` (faults off, both outside
//! and inside a madsim runtime with latency and yields) and against the real `StdFs` on
//! a temporary directory, so the simulator cannot drift from POSIX.

use cafelog_engine::fs::{File, Fs, OpenMode, StdFs, read_exact_at};
use cafelog_sim::fs::{FaultOptions, SimFs};
use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

const EBADF: i32 = 9;

async fn read_all<F: File>(file: &F) -> Vec<u8> {
    let len = file.len().await.expect("len") as usize;
    let mut buf = vec![0xAA; len + 16];
    let mut done = 0;
    loop {
        let n = file
            .read_at(&mut buf[done..], done as u64)
            .await
            .expect("read");
        if n == 0 {
            break;
        }
        done += n;
    }
    buf.truncate(done);
    buf
}

async fn conformance<F: Fs>(fs: F, root: &Path)
where
    F::File: std::fmt::Debug,
{
    let p = |name: &str| root.join(name);

    // Directories.
    fs.create_dir_all(root).await.expect("create root");
    fs.create_dir_all(root)
        .await
        .expect("create_dir_all is idempotent");
    assert!(fs.exists(root).await.expect("exists"));
    assert_eq!(fs.list_dir(root).await.expect("list"), Vec::<String>::new());
    fs.create_dir_all(&p("x/y/z")).await.expect("nested");
    assert!(fs.exists(&p("x/y/z")).await.expect("exists"));
    assert_eq!(
        fs.list_dir(&p("x")).await.expect("list"),
        vec!["y".to_owned()]
    );
    assert_eq!(
        fs.list_dir(&p("nope"))
            .await
            .expect_err("missing dir")
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        fs.sync_dir(&p("nope"))
            .await
            .expect_err("missing dir")
            .kind(),
        ErrorKind::NotFound
    );

    // Opening missing files.
    for mode in [OpenMode::Read, OpenMode::ReadWrite] {
        let error = fs
            .open(&p("missing"), mode)
            .await
            .expect_err("missing file");
        assert_eq!(error.kind(), ErrorKind::NotFound, "{mode:?}");
    }
    let error = fs
        .open(&p("nope/file"), OpenMode::CreateNew)
        .await
        .expect_err("missing parent");
    assert_eq!(error.kind(), ErrorKind::NotFound);
    assert!(!fs.exists(&p("missing")).await.expect("exists"));

    // create_new, then create_new on the existing file fails.
    let a = fs
        .open(&p("a"), OpenMode::CreateNew)
        .await
        .expect("create a");
    assert_eq!(
        fs.open(&p("a"), OpenMode::CreateNew)
            .await
            .expect_err("exists")
            .kind(),
        ErrorKind::AlreadyExists
    );
    assert!(fs.exists(&p("a")).await.expect("exists"));
    assert_eq!(a.len().await.expect("len"), 0);

    // Writes and reads at positions, holes, reads past the end.
    a.write_at(b"hello", 0).await.expect("write");
    let mut buf = [0u8; 5];
    assert_eq!(a.read_at(&mut buf, 0).await.expect("read"), 5);
    assert_eq!(&buf, b"hello");
    assert_eq!(a.read_at(&mut buf, 5).await.expect("read at end"), 0);
    assert_eq!(a.read_at(&mut buf, 1000).await.expect("read past end"), 0);
    a.write_at(b"xy", 10).await.expect("write past end");
    assert_eq!(a.len().await.expect("len"), 12);
    assert_eq!(read_all(&a).await, b"hello\0\0\0\0\0xy");
    let mut big = [0u8; 64];
    assert_eq!(a.read_at(&mut big, 8).await.expect("short read"), 4);
    assert_eq!(&big[..4], b"\0\0xy");
    a.write_at(b"", 100).await.expect("empty write");
    assert_eq!(a.len().await.expect("empty write does not extend"), 12);
    a.write_at(b"HE", 0).await.expect("overwrite");
    assert_eq!(read_all(&a).await, b"HEllo\0\0\0\0\0xy");
    let mut exact = [0u8; 4];
    assert_eq!(
        read_exact_at(&a, &mut exact, 10)
            .await
            .expect_err("short")
            .kind(),
        ErrorKind::UnexpectedEof
    );

    // set_len shrink and grow.
    a.set_len(3).await.expect("shrink");
    assert_eq!(read_all(&a).await, b"HEl");
    a.set_len(6).await.expect("grow");
    assert_eq!(read_all(&a).await, b"HEl\0\0\0");
    a.sync_data().await.expect("sync_data");
    fs.sync_dir(root).await.expect("sync_dir");

    // A read-only handle refuses writes; a second handle sees the same file.
    let a_read = fs.open(&p("a"), OpenMode::Read).await.expect("open read");
    assert_eq!(
        a_read
            .write_at(b"z", 0)
            .await
            .expect_err("read-only")
            .raw_os_error(),
        Some(EBADF)
    );
    assert_eq!(read_all(&a_read).await, b"HEl\0\0\0");
    a_read
        .sync_data()
        .await
        .expect("fsync of a read-only fd is allowed");

    // CreateTruncate: truncates an existing file, creates a missing one.
    let a2 = fs
        .open(&p("a"), OpenMode::CreateTruncate)
        .await
        .expect("truncate a");
    assert_eq!(a2.len().await.expect("len"), 0);
    assert_eq!(a.len().await.expect("other handle sees the truncation"), 0);
    a2.write_at(b"second", 0).await.expect("write");
    let b = fs
        .open(&p("b"), OpenMode::CreateTruncate)
        .await
        .expect("create b");
    b.write_at(b"bee", 0).await.expect("write b");

    // Rename over an existing file; the moved file's handles follow it.
    fs.rename(&p("a"), &p("b")).await.expect("rename over");
    assert!(!fs.exists(&p("a")).await.expect("exists"));
    let b2 = fs.open(&p("b"), OpenMode::ReadWrite).await.expect("open b");
    assert_eq!(read_all(&b2).await, b"second");
    a2.write_at(b"S", 0)
        .await
        .expect("write through the old handle");
    assert_eq!(read_all(&b2).await, b"Second");
    assert_eq!(
        read_all(&b).await,
        b"bee",
        "the replaced file lives on in its handle"
    );
    fs.rename(&p("b"), &p("b"))
        .await
        .expect("rename onto itself");
    assert_eq!(read_all(&b2).await, b"Second");
    assert_eq!(
        fs.rename(&p("a"), &p("c"))
            .await
            .expect_err("missing")
            .kind(),
        ErrorKind::NotFound
    );
    fs.sync_dir(root).await.expect("sync_dir");

    // Remove; an open handle still reads the unlinked file.
    fs.remove_file(&p("b")).await.expect("remove");
    assert!(!fs.exists(&p("b")).await.expect("exists"));
    assert_eq!(read_all(&b2).await, b"Second");
    assert_eq!(
        fs.remove_file(&p("b")).await.expect_err("again").kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        fs.open(&p("b"), OpenMode::Read)
            .await
            .expect_err("gone")
            .kind(),
        ErrorKind::NotFound
    );

    // list_dir is sorted and lists files and subdirectories.
    for name in ["c", "a", "b2", "00000000000000000010.log", "hwm"] {
        fs.open(&p(name), OpenMode::CreateNew)
            .await
            .expect("create");
    }
    fs.sync_dir(root).await.expect("sync_dir");
    assert_eq!(
        fs.list_dir(root).await.expect("list"),
        ["00000000000000000010.log", "a", "b2", "c", "hwm", "x"]
    );
}

#[test]
fn std_fs_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    pollster::block_on(conformance(StdFs, &dir.path().join("root")));
}

#[test]
fn sim_fs_conforms_outside_a_runtime() {
    let fs = SimFs::new(1, FaultOptions::none()).expect("options");
    pollster::block_on(conformance(fs.clone(), Path::new("/data/root")));
    fs.check_invariants();
}

#[test]
fn sim_fs_conforms_with_latency_inside_madsim() {
    let mut options = FaultOptions::none();
    options.latency_probability = 0.3;
    options.latency_min = Duration::from_millis(1);
    options.latency_max = Duration::from_millis(20);
    options.latency_after_probability = 0.2;
    options.yield_probability = 0.5;
    let fs = SimFs::new(2, options).expect("options");
    let runtime = madsim::runtime::Runtime::with_seed_and_config(2, madsim::Config::default());
    let elapsed = runtime.block_on({
        let fs = fs.clone();
        async move {
            let start = madsim::time::TimeHandle::current().elapsed();
            conformance(fs, Path::new("/data/root")).await;
            madsim::time::TimeHandle::current().elapsed() - start
        }
    });
    assert!(
        elapsed >= Duration::from_millis(10),
        "latency was injected: {elapsed:?}"
    );
    fs.check_invariants();
}
