"""The nine CNN architectures the `onnx` package ships as test data (onnx/backend/test/data/light/light_*.onnx),
made runnable: their weights are ConstantOfShape fills there; here each becomes an initializer of seeded random
values of the same shape, scaled so that activations stay finite (He-normal for weights, batchnorm scales and
variances in [0.5, 1.5) and [0.2, 0.6), small biases and means). A final Softmax is dropped: the benchmark and the
tests compare logits (a saturated softmax hides errors).

    prepare(name, dst, seed=0) -> (inputs [(name, shape)], outputs [name])
"""
import os

MODELS = {  # short name -> file stem in onnx/backend/test/data/light
    "alexnet": "bvlc_alexnet", "densenet121": "densenet121", "inception_v1": "inception_v1",
    "inception_v2": "inception_v2", "resnet50": "resnet50", "shufflenet": "shufflenet", "squeezenet": "squeezenet",
    "vgg19": "vgg19", "zfnet512": "zfnet512",
}


def source(name):
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{MODELS[name]}.onnx")


def prepare(name, dst, seed=0):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(source(name))
    g = m.graph
    rng = np.random.default_rng(seed)
    inits = {i.name: i for i in g.initializer}
    produced = {o for n in g.node for o in n.output}
    nodes, weights = [], []
    for n in g.node:
        if n.op_type != "ConstantOfShape" or n.input[0] not in inits:
            nodes.append(n)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[n.input[0]]).reshape(-1)]
        w = n.output[0]
        if len(shape) >= 2:  # convolution and dense weights: He-normal
            a = rng.standard_normal(shape) * np.sqrt(2.0 / max(1, int(np.prod(shape[1:]))))
        elif any(k in w for k in ("riv", "var")):
            a = rng.uniform(0.5, 1.5, shape)
        elif any(k in w for k in ("bn_s", "scale", "_s_")):
            a = rng.uniform(0.2, 0.6, shape)
        else:
            a = rng.standard_normal(shape) * 0.1
        weights.append(numpy_helper.from_array(a.astype(np.float32), w))
    used = {i for n in nodes for i in n.input}
    inits_kept = [i for i in g.initializer if i.name in used] + weights
    init_names = {i.name for i in inits_kept}
    inputs = [i for i in g.input if i.name in used and i.name not in init_names and i.name not in produced]
    outputs = list(g.output)
    if nodes[-1].op_type == "Softmax" and nodes[-1].output[0] == outputs[0].name:
        sm = nodes.pop()
        outputs = [helper.make_tensor_value_info(sm.input[0], onnx.TensorProto.FLOAT, None)]
    model = helper.make_model(helper.make_graph(nodes, g.name, inputs, outputs, inits_kept),
                              opset_imports=m.opset_import, ir_version=max(m.ir_version, 7))
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    onnx.save(model, dst)
    return ([(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim]) for i in inputs],
            [o.name for o in outputs])
