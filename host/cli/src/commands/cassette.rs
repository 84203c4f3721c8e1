//! `toolhost record` and `toolhost replay`: scripted sessions recorded to a
//! cassette, and cassettes played back (or verified by running again).

use super::{Context, ToolSet};
use anyhow::bail;
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_contract::ToolCall;
use toolhost_pipeline::replay::{Layer, Mode, Replay};
use toolhost_pipeline::{ApproveAll, Pipeline};

/// `toolhost record`'s options.
#[derive(Args)]
pub struct RecordArgs {
    /// The script.
    script: PathBuf,
    /// The cassette to write.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    #[command(flatten)]
    tools: ToolSet,
    /// The session seed.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Approve every `ask` (otherwise `ask` is denied, as recorded).
    #[arg(long)]
    yes: bool,
}

/// `toolhost replay`'s options.
#[derive(Args)]
pub struct ReplayArgs {
    /// The cassette.
    cassette: PathBuf,
    /// Re-run the components and compare with the recording.
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    tools: ToolSet,
    /// Approve every `ask` (as the recording session did, if it did).
    #[arg(long)]
    yes: bool,
}

/// Runs the script's calls and writes the cassette.
pub async fn record(ctx: &Context, a: RecordArgs) -> anyhow::Result<()> {
    let calls = toolhost::script::read_script(&a.script)?
        .iter()
        .map(|c| (c.tool.clone(), c.arguments_text()))
        .collect();
    let host = ctx.host(&a.tools).await?;
    let replay = Replay::open(&a.out, Mode::Record, Layer::Cassette)?;
    let mut b = host
        .session()
        .deterministic(a.seed)
        .cassette(replay.clone());
    if a.yes {
        b = b.approver(Arc::new(ApproveAll));
    }
    run_calls(&b.build(), calls).await?;
    if let Err(report) = replay.finish() {
        bail!("{report}");
    }
    out!("recorded to {}", a.out.display());
    Ok(())
}

/// Replays the cassette's calls; exits 1 on a divergence.
pub async fn replay(ctx: &Context, a: ReplayArgs) -> anyhow::Result<()> {
    let layer = if a.verify {
        Layer::Verify
    } else {
        Layer::Cassette
    };
    let replay = Replay::open(&a.cassette, Mode::Replay, layer)?;
    let host = ctx.host(&a.tools).await?;
    let mut b = host.session().cassette(replay.clone());
    if a.yes {
        b = b.approver(Arc::new(ApproveAll));
    }
    let pipeline = b.build();
    let calls = replay
        .entries()
        .iter()
        .map(|e| (e.key.tool.clone(), e.argument_text()))
        .collect();
    run_calls(&pipeline, calls).await?;
    match replay.finish() {
        Ok(()) => out!(
            "{} call(s) replayed from {} ({}): no divergence ({} ran)",
            replay.entries().len(),
            a.cassette.display(),
            if a.verify {
                "verified by re-running"
            } else {
                "from the cassette"
            },
            pipeline.dispatches()
        ),
        Err(report) => {
            eprintln!("{report}");
            std::process::exit(1);
        }
    }
    Ok(())
}

/// Runs `calls` in order, printing one line each.
async fn run_calls(pipeline: &Pipeline, calls: Vec<(String, String)>) -> anyhow::Result<()> {
    for (i, (tool, args)) in calls.into_iter().enumerate() {
        let r = pipeline
            .execute(
                ToolCall::new(format!("call_{}", i + 1), tool.clone(), args),
                Default::default(),
            )
            .await;
        let status = r.code().map_or("ok".to_owned(), |c| format!("error [{c}]"));
        out!("{:>3}. {tool}: {status}", i + 1);
    }
    Ok(())
}
