//! `toolhost call`: one tool call through the whole pipeline, from a shell.

use super::{Context, ToolSet, on_signal};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost::TerminalApprover;
use toolhost_contract::ToolCall;
use toolhost_pipeline::{ApproveAll, SessionLog};

/// `toolhost call`'s options.
#[derive(Args)]
pub struct CallArgs {
    /// The tool's name.
    tool: String,
    /// The arguments, as the model would emit them (raw JSON text).
    #[arg(long, default_value = "")]
    args: String,
    #[command(flatten)]
    tools: ToolSet,
    /// Print the whole result as JSON.
    #[arg(long)]
    json: bool,
    /// Append the call and result events to this session log.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Approve every `ask` without prompting.
    #[arg(long)]
    yes: bool,
    /// Deterministic: the guest's clocks and randomness derive from
    /// this seed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
}

/// Runs the call and prints its result; exits 1 when it is an error.
pub async fn run(ctx: &Context, a: CallArgs) -> anyhow::Result<()> {
    let host = ctx.host(&a.tools).await?;
    let mut b = host.session();
    if let Some(seed) = a.seed {
        b = b.deterministic(seed);
    }
    if a.yes {
        b = b.approver(Arc::new(ApproveAll));
    } else if std::io::stdin().is_terminal() {
        b = b.approver(Arc::new(TerminalApprover));
    }
    if let Some(path) = a.log {
        b = b.session_log(Arc::new(SessionLog::open(&path)?));
    }
    let pipeline = b.build();
    let result = pipeline
        .execute(ToolCall::new("cli-1", a.tool, a.args), on_signal())
        .await;
    if a.json {
        out!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        if let Some(e) = result.error() {
            eprintln!("error [{}]", e.code);
        }
        out!("{}", result.text());
    }
    if result.is_error() {
        std::process::exit(1);
    }
    Ok(())
}
