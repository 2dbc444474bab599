//! `cafelog merge`: one summary from the JSON files of a sweep's shards.

use super::*;

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// JSON files written by `cafelog sweep --json` (e.g. one per shard).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Also write the merged records to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `cafelog merge`: one summary from the JSON files of several sweeps (shards).
pub fn merge_command(args: &MergeArgs) -> ExitCode {
    let mut records = Vec::new();
    for path in &args.files {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("cafelog: error: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        };
        // A sweep killed while it wrote a line leaves that line without its newline.
        let cut = (!text.is_empty() && !text.ends_with('\n')).then(|| text.lines().count());
        for (line_no, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            match serde_json::from_str::<SeedRecord>(line) {
                Ok(r) => records.push(r),
                Err(_) if cut == Some(line_no + 1) => eprintln!(
                    "cafelog: warning: {}:{}: a line cut short (a sweep stopped while it \
                     wrote it), left out",
                    path.display(),
                    line_no + 1
                ),
                Err(e) => {
                    eprintln!("cafelog: error: {}:{}: {e}", path.display(), line_no + 1);
                    return ExitCode::from(2);
                }
            }
        }
    }
    records.sort_by_key(|r| (r.profile.clone(), r.seed));
    records.dedup_by_key(|r| (r.profile.clone(), r.seed));
    if let Some(path) = &args.json
        && let Err(e) = write_json(path, &records)
    {
        eprintln!("cafelog: error: {e}");
        return ExitCode::from(2);
    }
    let wall = Duration::from_millis(records.iter().map(|r| r.wall_ms).sum());
    let mut out = std::io::stdout().lock();
    if print_summary(&mut out, &records, wall).is_err() {
        return ExitCode::from(2);
    }
    if records.iter().all(SeedRecord::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
