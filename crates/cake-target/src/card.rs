//! GPU products within a target: one exact target (`sm_90a`) covers cards that differ in memory
//! bandwidth, L2 size and clocks (an H100 and an H200). What depends on the card rather than the
//! architecture — a family route's `cards`, a calibration table — names it by a word of the
//! GPU's name as the driver reports it ("NVIDIA H100 80GB HBM3").

/// Whether `card` can name a GPU: one word of letters and digits (`H100`), as [`card_is`] matches.
pub fn is_card_word(card: &str) -> bool {
    !card.is_empty() && card.chars().all(|c| c.is_ascii_alphanumeric())
}

/// Whether `card` is one of the words of the GPU's name `gpu` (case aside): `H100` is
/// "NVIDIA H100 80GB HBM3" and "NVIDIA H100 NVL", and not "NVIDIA GH200 480GB".
pub fn card_is(card: &str, gpu: &str) -> bool {
    gpu.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word.eq_ignore_ascii_case(card))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_is_a_whole_word_of_the_name() {
        assert!(card_is("H100", "NVIDIA H100 80GB HBM3"));
        assert!(card_is("h200", "NVIDIA H200"));
        assert!(!card_is("H100", "NVIDIA GH200 480GB"));
        assert!(!card_is("H10", "NVIDIA H100 80GB HBM3"));
        assert!(is_card_word("H100") && !is_card_word("H100 PCIe") && !is_card_word(""));
    }
}
