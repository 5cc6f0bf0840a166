//! A spinner on stderr while a command waits on nvcc or the GPU (`cake build`, `cake test`,
//! `cake bench`). Drawn only when stderr is a terminal: in a pipe, a log or a test it writes
//! nothing at all, so captured output stays exactly the command's own.

use std::io::IsTerminal;
use std::time::Duration;

pub struct Spinner(Option<indicatif::ProgressBar>);

impl Spinner {
    /// Start spinning with `msg`, when stderr is a terminal.
    pub fn start(msg: impl Into<String>) -> Spinner {
        Spinner::start_when(true, msg)
    }

    /// Start only when `wanted` too (not with --verbose, whose lines come from other threads).
    pub fn start_when(wanted: bool, msg: impl Into<String>) -> Spinner {
        Spinner::start_if(wanted && std::io::stderr().is_terminal(), msg)
    }

    fn start_if(terminal: bool, msg: impl Into<String>) -> Spinner {
        if !terminal {
            return Spinner(None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.set_message(msg.into());
        bar.enable_steady_tick(Duration::from_millis(100));
        Spinner(Some(bar))
    }

    /// Print a line on stdout without tearing the spinner (it is cleared and redrawn around it).
    pub fn println(&self, line: &str) {
        match &self.0 {
            Some(bar) => bar.suspend(|| outln!("{line}")),
            None => outln!("{line}"),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Spinner;

    #[test]
    fn nothing_is_drawn_off_a_terminal() {
        assert!(Spinner::start_if(false, "compiling").0.is_none());
        assert!(Spinner::start_if(true, "compiling").0.is_some());
    }
}
