//! Writes the committed disk fixtures (`corpus/disk/*/`) as inputs of the `scan` fuzz
//! target, one file per fixture, so a campaign starts from every case the format tests
//! know: `cargo run -p cafelog-engine --example fuzz_seeds -- corpus/disk fuzz/corpus/scan`
//! (what `ci/fuzz` does).

use cafelog_engine::fs::{File, Fs, OpenMode, StdFs};
use cafelog_engine::recovery::ScanInput;
use std::path::PathBuf;
use std::process::ExitCode;

async fn run(fixtures: PathBuf, out: PathBuf) -> std::io::Result<usize> {
    let fs = StdFs;
    fs.create_dir_all(&out).await?;
    let mut written = 0;
    for case in fs.list_dir(&fixtures).await? {
        let dir = fixtures.join(&case);
        if !std::fs::metadata(&dir)?.is_dir() {
            continue;
        }
        let Some(input) = ScanInput::read_dir(&fs, &dir).await? else {
            eprintln!("fuzz_seeds: {case} does not fit the fuzz input layout; skipped");
            continue;
        };
        let bytes = input
            .encode()
            .expect("read_dir only returns encodable inputs");
        let file = fs.open(&out.join(&case), OpenMode::CreateTruncate).await?;
        file.write_at(&bytes, 0).await?;
        written += 1;
    }
    Ok(written)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [fixtures, out] = args.as_slice() else {
        eprintln!("usage: fuzz_seeds <fixtures dir> <corpus dir>");
        return ExitCode::from(2);
    };
    match pollster::block_on(run(fixtures.into(), out.into())) {
        Ok(written) => {
            println!("fuzz_seeds: {written} inputs in {out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fuzz_seeds: {e}");
            ExitCode::FAILURE
        }
    }
}
