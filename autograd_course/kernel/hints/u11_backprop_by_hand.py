"""Hints for assignment 11_backprop_by_hand: ``hint("qN")`` shows them in order."""

HINTS: dict[str, tuple[str, ...]] = {
    "q1": (
        "Run the forward pass first and keep what the backward reads: z, h = act(z), r, the "
        "normalised rows n and 1 / std, u and the logits. Then go back one step at a time, "
        "each gradient of its tensor's shape (write the shapes next to the lines): the "
        "logits' gradient comes from the mean cross-entropy, then u's, n's, r's, z's; each "
        "parameter's gradient comes from the gradient of the step it enters. r = z + branch "
        "means z's gradient has two parts.",
        "The logits' gradient is softmax minus the one-hot of the labels (num_classes = "
        "logits.shape[1]), over N. For out = inp @ W.T + bias: W's gradient is grad_out.T @ "
        "inp, the bias's is grad_out summed over the rows, inp's is grad_out @ W. gamma's "
        "gradient sums grad_u * n over the rows, beta's sums grad_u. Layer norm takes grad_n "
        "= grad_u * gamma to grad_r = (grad_n - its row mean - n * the row mean of grad_n * "
        "n) / std. The branch's gradient is (grad_r @ W2) * act_grad(z), and z's is that plus "
        "grad_r itself.",
    ),
    "q2": (
        "A tensor that broadcast was used at several places of y at once, so its gradient "
        "adds up the gradients of all those places: first multiply grad_y by the factor that "
        "y's formula puts next to the tensor (x * g: g for x, x for g, 1 for b), then sum "
        "back down to the tensor's own shape.",
        "Summing back to a shape takes two kinds of dimensions: the leading ones the tensor "
        "lacks (y has more dimensions: sum them away), then those where the tensor has size "
        "1 and y does not (sum them with keepdim=True, so that the size 1 stays). Compute "
        "the list of dimensions from the shapes; when it is empty, keep the tensor as it is "
        "(PyTorch's sum(dim=()) sums everything). Tensor.sum_to_size(shape) does both steps "
        "in one call.",
    ),
    "q3": (
        "Each position of indices copied one row of the weight into the output, so the "
        "gradient of that position's output row goes back into that weight row; positions "
        "that share an index add up. Flatten the positions: indices to one long vector, "
        "grad_out to one row per position.",
        "Start from zeros of weight_shape with grad_out's dtype, and add each position's row "
        "into the row of its index with an operation that accumulates repeated indices "
        "(index_add_, or index_put_ with accumulate=True; dW[indices] += ... keeps only one "
        "of them). Then the padding row: leave its positions out, or set that row to 0 once "
        "the rows are added (before, the adding puts them back); a negative padding_idx "
        "names the row V + padding_idx, and padding_idx may be 0, so test it against None.",
    ),
    "q4": (
        "Go through the chain one operation at a time and ask two things: which of its "
        "inputs need a gradient (W and b do, and everything computed from them; x and t do "
        "not), and what its backward formula reads to compute those gradients: an input, "
        "the output, or nothing (an addition or a sum needs no numbers).",
        "A matrix product's backward reads the other factor, for each factor that needs a "
        "gradient; tanh and exp compute their derivative from their output; a division "
        "needs both of its inputs when both need a gradient; a product with a constant reads "
        "the constant (only). A tensor that some operation saves is saved, whichever "
        "operation it is.",
    ),
    "q5": (
        "A gradient has the shape of the tensor it is the gradient of, whatever the "
        "operations after it: write each tensor's shape next to its line of the chain.",
        "Wt is W.T, so its shape is W's, transposed. s is a sum over dim 1 with "
        "keepdim=True: the summed dimension stays, with size 1. b was broadcast over the "
        "batch in z = x @ Wt + b, but its gradient is summed back to b's own shape.",
    ),
}
