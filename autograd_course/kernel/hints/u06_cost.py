"""Hints for assignment 06_cost: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Call fn(*inputs) inside `with saved_tensors_hooks(pack, unpack):`. Autograd calls "
        "pack(t) with every tensor it saves and stores what pack returns (t.detach() is the "
        "same storage), and unpack gives it back (return it). Note the size of what pack "
        "receives, then add up bytes.",
        "In pack, record t.untyped_storage().nbytes() in a dict keyed by "
        "t.untyped_storage().data_ptr(), so that a storage saved twice (x * x, or x and x.T) "
        "counts once and whole. Keep numbers there, not tensors: the graph keeps pack, and "
        "all it holds, alive. The answer is the dict's total, an int.",
    ),
    "q2": (
        "Go through the lines one at a time and ask what the backward formula of each "
        "operation needs: + 1 and mean need nothing, x ** 2 needs its input, exp needs its "
        "output, a product needs the other factor of each factor that requires grad.",
        "a = x * w: does the gradient of x need w, and that of w need x? c = b.exp(): "
        "exp' = exp, so which tensor holds the value it needs? d = c * k: k needs no gradient, "
        "so only the gradient of c matters: which factor does it need? e = d ** 2: 2d needs "
        "which tensor?",
    ),
    "q3": (
        "For each formulation, list what every operation saves (the lesson's table), then "
        "count the storages: a tensor saved twice is still one storage.",
        "Pair 1: x * x saves x twice; x.pow(2) saves x once. Pair 2: in B, exp and 1 / t each "
        "save their outputs; torch.sigmoid saves one output. Pair 3: a checkpoint saves only "
        "its input, the three tanh save three outputs. Check with your saved_bytes(square_a, "
        "x) and so on, on x = torch.randn(4, requires_grad=True).",
    ),
}
