//! `mcp-sieve audit`: the audit file's records (and its rotated files', oldest first) that a
//! tool, a principal and a time span select, printed as the JSON lines they are (for `jq`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use mcp_sieve::operate::audit::{since, Query};
use serde_json::Value;

use crate::cli::AuditArgs;
use crate::error::ServerError;
use crate::platform::now_ms;

/// The file and its rotated ones that exist, oldest first (`F.N` … `F.1`, `F`).
fn files(file: &Path) -> Vec<PathBuf> {
    let mut rotated: Vec<(u32, PathBuf)> = Vec::new();
    for n in 1.. {
        let mut p = file.as_os_str().to_owned();
        p.push(format!(".{n}"));
        let p = PathBuf::from(p);
        if !p.exists() {
            break;
        }
        rotated.push((n, p));
    }
    let mut all: Vec<PathBuf> = rotated.into_iter().rev().map(|(_, p)| p).collect();
    if file.exists() {
        all.push(file.to_path_buf());
    }
    all
}

/// Prints the records `args` select; says on stderr how many of how many.
pub fn run(args: &AuditArgs) -> Result<(), ServerError> {
    let query = Query {
        item: args.tool.clone(),
        principal: args.principal.clone(),
        since_ms: args.since.as_deref().map(|s| since(s, now_ms())).transpose()?,
    };
    let all = files(&args.file);
    if all.is_empty() {
        return Err(ServerError::Config(format!(
            "no audit file at {} (the document's audit.file, relative to the document); give it with --file",
            args.file.display()
        )));
    }
    let (mut kept, mut read) = (0, 0);
    let mut out = std::io::stdout().lock();
    for path in all {
        let f =
            std::fs::File::open(&path).map_err(|e| ServerError::Io(format!("cannot read {}", path.display()), e))?;
        for line in BufReader::new(f).lines() {
            let line = line.map_err(|e| ServerError::Io(format!("cannot read {}", path.display()), e))?;
            let Ok(record) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            read += 1;
            if query.keeps(&record) {
                kept += 1;
                if writeln!(out, "{line}").is_err() {
                    return Ok(());
                }
            }
        }
    }
    eprintln!("mcp-sieve: {kept} of {read} records");
    Ok(())
}
