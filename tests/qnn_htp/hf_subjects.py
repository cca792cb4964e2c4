"""Hugging Face architectures as real-QNN subjects: model code nobody here wrote, built from tiny configs.

Each builder makes a transformers model from a config object (random weights, no download), in
eval mode with the smallest shape that still runs the architecture's own code: one layer,
hidden size 32, two heads, sequences of 8 tokens (or 16x16 images, 16 audio frames). A
``Subject`` wraps it in a module that returns plain tensors, so that both flows export the same
forward. Decoders get ``attention_mask`` beside ``input_ids``: with ids alone transformers'
position ``arange`` becomes a QNN partition fed only by constants, which neither flow can
compile (issue 20; docs/qnn-htp.md).

``hf("llama")`` is fp16; ``hf("llama", "16a8w")`` is PT2E-quantized with QnnQuantizer, as
subjects.quantize does for the zoo. ``decode("llama")`` is the decoder with transformers'
static KV cache (``TorchExportableModuleWithStaticCache``, the module its ExecuTorch
integration exports): one token per call, run for ``DECODE_STEPS`` calls on one loaded program,
so the cache the delegate writes at one step is read at the next.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qnn_migrate_tests.qnn_htp.subjects import Subject, quantize

SEQ = 8
VOCAB = 64
# A transformer this small: 1 layer, hidden 32, 2 heads of 16, MLP 64.
HIDDEN, HEADS, HEAD_DIM, MLP = 32, 2, 16, 64


def _decoder_config(name: str) -> Any:
    import transformers as tf

    common: dict[str, Any] = {
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": MLP,
        "num_hidden_layers": 1,
        "num_attention_heads": HEADS,
        "num_key_value_heads": 1,  # grouped-query attention, as the released models use
        "max_position_embeddings": 32,
        **TOKENS,
    }
    if name == "llama":
        return tf.LlamaConfig(**common)
    if name == "qwen2":
        return tf.Qwen2Config(**common)
    if name == "qwen3":
        # Per-head q/k RmsNorm over [1, seq, heads, head_dim]. Issue 20 saw QNN 2.51 compute
        # it wrong in fp16 at [1, 16, 4, 16]; at this size ([1, 8, 2, 16], and [1, 8, 4, 16]
        # tried too) both flows match eager at 61-62 dB, as the siblings do.
        return tf.Qwen3Config(**common, head_dim=HEAD_DIM)
    if name == "gemma":
        return tf.GemmaConfig(**common, head_dim=HEAD_DIM)  # scaled embeddings, gelu MLP
    if name == "phi3":
        return tf.Phi3Config(**common)  # fused qkv and gate_up projections
    if name == "mistral":
        return tf.MistralConfig(**common)  # sliding-window attention (wider than the cache here)
    raise KeyError(name)


DECODERS = ("llama", "qwen2", "qwen3", "gemma", "phi3")
# Decoders run with a static KV cache (``decode``): every decoder above, and mistral.
DECODE = (*DECODERS, "mistral")
DECODE_STEPS = 3
CACHE_LEN = 32


def _tensor_output(model: Any, key: str, names: tuple[str, ...], **fixed: Any) -> Any:
    """``model`` behind a forward that passes its inputs as the keywords ``names`` and returns
    ``output[key]`` (a tensor); ``fixed``: keyword arguments of every call (``use_cache=False``
    for decoders: no KV cache object to export)."""
    import torch

    class TensorOutput(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            inputs = dict(zip(names, args, strict=True))
            return self.model(**inputs, return_dict=True, **fixed)[key]

    return TensorOutput().eval()


TEXT = ("input_ids", "attention_mask")
# Special tokens inside the tiny vocabulary (the configs' defaults point past it).
TOKENS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


def _text_inputs() -> tuple[Any, Any]:
    import torch

    ids = torch.randint(1, VOCAB, (1, SEQ), dtype=torch.long)
    return ids, torch.ones(1, SEQ, dtype=torch.long)


class _Decoder:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self) -> tuple[Any, tuple[Any, ...]]:
        import transformers as tf

        model = tf.AutoModelForCausalLM.from_config(_decoder_config(self.name))
        return _tensor_output(model.eval(), "logits", TEXT, use_cache=False), _text_inputs()


def _gpt2() -> tuple[Any, tuple[Any, ...]]:
    import transformers as tf

    config = tf.GPT2Config(
        vocab_size=VOCAB, n_positions=32, n_embd=HIDDEN, n_layer=1, n_head=HEADS, **TOKENS
    )
    model = tf.GPT2LMHeadModel(config).eval()
    return _tensor_output(model, "logits", TEXT, use_cache=False), _text_inputs()


def _bert() -> tuple[Any, tuple[Any, ...]]:
    import transformers as tf

    config = tf.BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=1,
        num_attention_heads=HEADS,
        intermediate_size=MLP,
        max_position_embeddings=32,
        pad_token_id=0,
    )
    model = tf.BertModel(config, add_pooling_layer=False).eval()
    return _tensor_output(model, "last_hidden_state", TEXT), _text_inputs()


def _vit() -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers as tf

    config = tf.ViTConfig(
        image_size=16,
        patch_size=8,
        num_channels=3,
        hidden_size=HIDDEN,
        num_hidden_layers=1,
        num_attention_heads=HEADS,
        intermediate_size=MLP,
    )
    model = tf.ViTModel(config, add_pooling_layer=False).eval()
    return _tensor_output(model, "last_hidden_state", ("pixel_values",)), (
        torch.randn(1, 3, 16, 16),
    )


def _whisper_encoder() -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers as tf

    config = tf.WhisperConfig(
        vocab_size=VOCAB,
        num_mel_bins=8,
        d_model=HIDDEN,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=HEADS,
        decoder_attention_heads=HEADS,
        encoder_ffn_dim=MLP,
        decoder_ffn_dim=MLP,
        max_source_positions=8,  # the encoder takes 2 x 8 frames (two convs, the second strided)
        max_target_positions=16,
        decoder_start_token_id=1,
        **TOKENS,
    )
    encoder = tf.WhisperForConditionalGeneration(config).eval().get_encoder()
    features = torch.randn(1, 8, 16)
    return _tensor_output(encoder, "last_hidden_state", ("input_features",)), (features,)


def _wav2vec2() -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers as tf

    config = tf.Wav2Vec2Config(
        vocab_size=32,
        hidden_size=HIDDEN,
        num_hidden_layers=1,
        num_attention_heads=HEADS,
        intermediate_size=MLP,
        conv_dim=(16, 16),  # the feature encoder: two convs, 400 samples -> 39 frames
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        # The positional conv: weight_norm(dim=2), grouped, as in the released models.
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
    )
    model = tf.Wav2Vec2Model(config).eval()
    return _tensor_output(model, "last_hidden_state", ("input_values",)), (torch.randn(1, 400),)


def _swin() -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers as tf

    config = tf.SwinConfig(
        image_size=16,
        patch_size=2,
        num_channels=3,
        embed_dim=16,
        depths=[2],  # a window block and a shifted-window block (roll, attention mask)
        num_heads=[HEADS],
        window_size=4,
        mlp_ratio=2.0,
    )
    model = tf.SwinModel(config, add_pooling_layer=False).eval()
    pixels = torch.randn(1, 3, 16, 16)
    return _tensor_output(model, "last_hidden_state", ("pixel_values",)), (pixels,)


def _distilbert() -> tuple[Any, tuple[Any, ...]]:
    import transformers as tf

    config = tf.DistilBertConfig(
        vocab_size=VOCAB,
        dim=HIDDEN,
        n_layers=1,
        n_heads=HEADS,
        hidden_dim=MLP,
        max_position_embeddings=32,
        pad_token_id=0,
    )
    model = tf.DistilBertModel(config).eval()
    return _tensor_output(model, "last_hidden_state", TEXT), _text_inputs()


def _t5_encoder() -> tuple[Any, tuple[Any, ...]]:
    import transformers as tf

    config = tf.T5Config(
        vocab_size=VOCAB,
        d_model=HIDDEN,
        d_kv=HEAD_DIM,
        d_ff=MLP,
        num_layers=1,
        num_heads=HEADS,  # relative position buckets, RMS layer norm without mean
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    model = tf.T5EncoderModel(config).eval()
    return _tensor_output(model, "last_hidden_state", TEXT), _text_inputs()


def _convnext() -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers as tf

    config = tf.ConvNextConfig(
        num_channels=3,
        patch_size=4,
        num_stages=2,
        hidden_sizes=[16, 32],
        depths=[1, 1],  # depthwise 7x7 conv, channels-last layer norm, layer scale
        image_size=32,
    )
    model = tf.ConvNextModel(config).eval()
    pixels = torch.randn(1, 3, 32, 32)
    return _tensor_output(model, "last_hidden_state", ("pixel_values",)), (pixels,)


def _mobilevit() -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers as tf

    config = tf.MobileViTConfig(
        image_size=32,
        patch_size=2,
        num_channels=3,
        hidden_sizes=[16, 16, 16],
        neck_hidden_sizes=[8, 8, 16, 16, 16, 16, 32],
        num_attention_heads=HEADS,
        mlp_ratio=2.0,
        expand_ratio=2.0,
    )
    model = tf.MobileViTModel(config, expand_output=False).eval()
    # The stem, the two MobileNet stages and the first MobileViT block (unfold into patches, two
    # transformer layers, fold back, fuse with a conv): the later blocks repeat it at fixed depth
    # (4 and 3 layers) and would quadruple the lowering for no op not already here.
    model.encoder.layer = model.encoder.layer[:3]
    # transformers' initialisation (std 0.02, batch-norm scales included) shrinks activations
    # to ~1e-23 by the third stage: below fp16's range, so QNN rightly gives zeros and the test
    # would compare nothing. PyTorch's own initialisation keeps them near 1.
    for module in model.modules():
        if isinstance(module, torch.nn.Conv2d | torch.nn.Linear | torch.nn.BatchNorm2d):
            module.reset_parameters()
    pixels = torch.randn(1, 3, 32, 32)
    return _tensor_output(model, "last_hidden_state", ("pixel_values",)), (pixels,)


BUILDERS: dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]] = {
    **{name: _Decoder(name) for name in DECODERS},
    "gpt2": _gpt2,
    "bert": _bert,
    "vit": _vit,
    "whisper_encoder": _whisper_encoder,
    "mobilevit": _mobilevit,
}
# Issue 31's architectures: an audio encoder with weight norm, a vision transformer with
# (shifted) windowed attention, encoder-only text models, a convnet with channels-last norms.
NEW_BUILDERS: dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]] = {
    "wav2vec2": _wav2vec2,
    "swin": _swin,
    "distilbert": _distilbert,
    "t5_encoder": _t5_encoder,
    "convnext": _convnext,
}

# The real-clients tier (test_real_clients.py, benchmarks/bench_real_clients.py): every
# architecture in fp16, and a decoder and an encoder in 8a8w and 16a8w, through both flows.
SUBJECTS: list[tuple[str, ...]] = [
    *[(name,) for name in BUILDERS],
    *[(name, precision) for name in ("llama", "bert") for precision in ("8a8w", "16a8w")],
]
# Lowered through the canonical flow only and held to eager (test_real_clients.py): the new
# architectures, and every decoder with a static KV cache over DECODE_STEPS decode steps (the
# wrapper cannot lower a static cache: I64toI32 fails on its 0-d position buffer).
CANONICAL_ONLY: list[tuple[str, str]] = [
    *[("qnn_migrate_tests.qnn_htp.hf_subjects:hf", name) for name in NEW_BUILDERS],
    *[("qnn_migrate_tests.qnn_htp.hf_subjects:decode", name) for name in DECODE],
    ("qnn_migrate_tests.qnn_htp.hf_subjects:buckets", "llama"),
]
# Sequence lengths of ``buckets``: QNN builds static shapes, one method per size.
BUCKETS = (4, 8)


# transformers' modules the builders import (a lazy import of 2.6 s of CPU per process).
MODELING = (
    "llama",
    "qwen2",
    "qwen3",
    "gemma",
    "phi3",
    "mistral",
    "gpt2",
    "bert",
    "vit",
    "whisper",
    "mobilevit",
    "wav2vec2",
    "swin",
    "distilbert",
    "t5",
    "convnext",
)


def preload() -> bool:
    """Import the modeling modules of every architecture above, without building a model (so
    no random state is used): the real-QNN fork server does it once and every child it forks
    inherits them. False when transformers is not installed."""
    import importlib

    try:
        for name in MODELING:
            importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    except ImportError:
        return False
    return True


def hf(name: str, precision: str | None = None) -> Subject:
    """Architecture ``name`` (a key of BUILDERS or NEW_BUILDERS) in fp16, or quantized in ``precision``."""
    import torch

    torch.manual_seed(sum(map(ord, name)))
    model, inputs = {**BUILDERS, **NEW_BUILDERS}[name]()
    if precision is None:
        return Subject(model, inputs, quantized=False)
    return Subject(quantize(model, inputs, precision), inputs, quantized=True)


def decode(name: str) -> Subject:
    """Decoder ``name`` (a key of DECODE) with transformers' static KV cache, fp16: one token per
    call at positions 0, 1, ..., DECODE_STEPS - 1, on one program (see the module doc)."""
    import torch
    import transformers as tf
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.manual_seed(sum(map(ord, name)))
    model = tf.AutoModelForCausalLM.from_config(_decoder_config(name)).eval()
    model.generation_config.cache_implementation = "static"
    cached = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=CACHE_LEN)

    class Decode(torch.nn.Module):
        """input_ids and cache_position as tensors in, logits out (the llm runner's signature)."""

        def __init__(self) -> None:
            super().__init__()
            self.cached = cached

        def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
            return self.cached(input_ids=input_ids, cache_position=cache_position)

    steps = [
        (torch.randint(3, VOCAB, (1, 1), dtype=torch.long), torch.tensor([i]))
        for i in range(DECODE_STEPS)
    ]
    return Subject(Decode().eval(), steps[0], quantized=False, steps=steps)


def buckets(name: str) -> Subject:
    """Decoder ``name`` (fp16) at the sizes of BUCKETS, one method per size (``forward_4``,
    ``forward_8``): what docs/passes.md says to do instead of a dynamic sequence length."""
    import torch

    torch.manual_seed(sum(map(ord, name)))
    model, _ = BUILDERS[name]()
    inputs = {}
    for size in BUCKETS:
        ids = torch.randint(1, VOCAB, (1, size), dtype=torch.long)
        inputs[f"forward_{size}"] = (ids, torch.ones(1, size, dtype=torch.long))
    return Subject({method: model for method in inputs}, inputs, quantized=False)
