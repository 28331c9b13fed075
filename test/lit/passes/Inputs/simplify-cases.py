#!/usr/bin/env python3
"""Writes test/lit/passes/simplify-<group>.test: the lit tests of the simplify pass, one case per block
(an input graph built by the case's function, the checks of CHK), split with split-file at test time.
Usage: simplify-cases.py [group...]   (default: every group). Review the diff of the .test files."""
import json, os, re, sys

class G:
    """A graph under construction, hash-consed like uopc's Context; dump() writes format v1 JSON."""
    def __init__(s): s.nodes=[]; s.memo={}
    def add(s, op, dtype, src=(), arg=None):
        key=(op,dtype,tuple(src),json.dumps(arg))
        if key in s.memo: return s.memo[key]
        n={"id":len(s.nodes),"op":op,"dtype":dtype}
        if src: n["src"]=list(src)
        if arg is not None: n["arg"]=arg
        s.nodes.append(n); s.memo[key]=n["id"]; return n["id"]
    def var(s, name, lo, hi, dtype="weakint"):
        e=s.add("STACK","void")
        return s.add("PARAM",dtype,[e],{"$":"ParamArg","slot":-1,"dtype":{"$":"DType","v":dtype},"vmin_vmax":[lo,hi],"name":name})
    def c(s, v, dtype="weakint"):
        if dtype=="bool": return s.add("CONST","bool",arg=bool(v))
        if dtype.startswith("float"):
            if isinstance(v,str) or float(v).is_integer(): return s.add("CONST",dtype,arg={"$":"float","v":repr(float(v)) if not isinstance(v,str) else v})
            return s.add("CONST",dtype,arg=v)
        return s.add("CONST",dtype,arg=v)
    def inv(s, dtype="weakint"): return s.add("CONST",dtype,arg={"$":"Invalid"})
    def op(s, op, *src, dtype=None):
        if dtype is None: dtype = "bool" if op in ("CMPLT","CMPNE","CMPEQ") else s.nodes[src[-1] if op=="WHERE" else src[0]]["dtype"]
        arg = {"$":"DType","v":dtype} if op in ("CAST","BITCAST") else None
        return s.add(op,dtype,list(src),arg)
    def dump(s, *roots):
        r=s.add("SINK","void",list(roots))
        lines=",\n".join(json.dumps(n,separators=(",",":")) for n in s.nodes)
        return '{"format":"uopc-graph","version":1,"nodes":[\n'+lines+'\n],"root":%d}\n'%r

W="weakint"
def scalar_f32(g, slot):
    """A float32 scalar tensor: RESHAPE(PARAM[1], ())."""
    p=g.add("PARAM","float32",[g.c(1)],{"$":"ParamArg","slot":slot,"dtype":{"$":"DType","v":"float32"}})
    return g.add("RESHAPE","float32",[p,g.add("STACK","void")])
def tensor_f32(g, slot, n):
    return g.add("PARAM","float32",[g.c(n)],{"$":"ParamArg","slot":slot,"dtype":{"$":"DType","v":"float32"}})
C={}  # group -> [(case name, function building the case's roots into a G)]
RAW={}  # case name -> a whole input document (cases taken from another pass's output)
def case(group,name):
    def deco(f): C.setdefault(group,[]).append((name,f)); return f
    return deco
# ---------------- arithmetic
@case("arithmetic","add-zero")
def _(g): a=g.var("a",0,9); return [g.op("ADD",a,g.c(0))]
@case("arithmetic","mul-one")
def _(g): a=g.var("a",0,9); return [g.op("MUL",g.c(1),a)]
@case("arithmetic","mul-zero-int")
def _(g): a=g.var("a",-5,9); return [g.op("MUL",a,g.c(0))]
@case("arithmetic","mul-zero-float-kept")
def _(g): x=scalar_f32(g,0); return [g.op("MUL",x,g.c(0.0,"float32"))]
@case("arithmetic","combine-terms")
def _(g): a=g.var("a",0,9); return [g.op("ADD",g.op("MUL",a,g.c(3)),g.op("MUL",a,g.c(4)))]
@case("arithmetic","sub-canonical")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); return [g.op("SUB",a,b)]
@case("arithmetic","two-stage")
def _(g): a=g.var("a",0,9); return [g.op("ADD",g.op("ADD",a,g.c(3)),g.c(5))]
@case("arithmetic","move-const")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); return [g.op("ADD",g.op("ADD",a,g.c(3)),b)]
@case("arithmetic","div-self")
def _(g): a=g.var("a",1,9); return [g.op("FLOORDIV",a,a)]
@case("arithmetic","div-self-maybe-zero-kept")
def _(g): a=g.var("a",0,9); return [g.op("FLOORDIV",a,a)]
@case("arithmetic","bool-mul-is-and")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); return [g.op("MUL",g.op("CMPLT",a,g.c(3)),g.op("CMPLT",b,g.c(4)))]
@case("arithmetic","tensor-kept")
def _(g):
    t=tensor_f32(g,0,4); return [g.op("MUL",t,g.c(1.0,"float32")), g.op("ADD",t,g.c(0.0,"float32"))]
@case("arithmetic","int32-two-stage")
def _(g): a=g.op("CAST",g.var("a",0,9),dtype="int32"); return [g.op("ADD",g.op("ADD",a,g.c(2147483647,"int32")),g.c(1,"int32"))]
# ---------------- compare
@case("compare","range-decided")
def _(g): a=g.var("a",0,9); return [g.op("CMPLT",a,g.c(10)), g.op("CMPLT",a,g.c(0)), g.op("CMPNE",a,g.c(12))]
@case("compare","range-undecided-kept")
def _(g): a=g.var("a",0,9); return [g.op("CMPLT",a,g.c(5))]
@case("compare","lt-self")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); x=g.op("ADD",a,b); return [g.op("CMPLT",x,x)]
@case("compare","add-const-lt")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); return [g.op("CMPLT",g.op("ADD",g.op("MUL",a,b),g.c(3)),g.c(7))]
@case("compare","int32-add-const-lt-kept")
def _(g): a=g.op("CAST",g.var("a",0,2147483647),dtype="int32"); return [g.op("CMPLT",g.op("ADD",a,g.c(5,"int32")),g.c(3,"int32"))]
@case("compare","div-lt")
def _(g): a=g.var("a",0,99); return [g.op("CMPLT",g.op("FLOORDIV",a,g.c(4)),g.c(3))]
@case("compare","max-folded")
def _(g): a=g.var("a",0,9); return [g.op("MAX",a,g.c(10)), g.op("MAX",a,g.c(-1))]
@case("compare","max-kept")
def _(g): a=g.var("a",0,9); return [g.op("MAX",a,g.c(5))]
@case("compare","eq-kept")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); return [g.op("CMPEQ",a,b)]
@case("compare","eq-self")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); x=g.op("ADD",a,b); return [g.op("CMPEQ",x,x)]
@case("compare","lt-folding")
def _(g): a=g.var("a",0,9); b=g.var("b",0,3); return [g.op("CMPLT",g.op("ADD",g.op("MUL",a,g.c(4)),b),g.c(8))]
@case("compare","float-lt-self")
def _(g): x=scalar_f32(g,0); return [g.op("CMPLT",x,x)]
# ---------------- divmod
@case("divmod","div-strided")
def _(g): a=g.var("a",0,9); b=g.var("b",0,3); return [g.op("FLOORDIV",g.op("ADD",g.op("MUL",a,g.c(4)),b),g.c(4))]
@case("divmod","mod-strided")
def _(g): a=g.var("a",0,9); b=g.var("b",0,3); return [g.op("FLOORMOD",g.op("ADD",g.op("MUL",a,g.c(4)),b),g.c(4))]
@case("divmod","div-strided-overlap-kept")
def _(g): a=g.var("a",0,9); b=g.var("b",0,4); return [g.op("FLOORDIV",g.op("ADD",g.op("MUL",a,g.c(4)),b),g.c(4))]
@case("divmod","nested-mod-div")
def _(g): a=g.var("a",0,99); return [g.op("FLOORDIV",g.op("FLOORMOD",a,g.c(12)),g.c(4))]
@case("divmod","recombine")
def _(g): a=g.var("a",0,99); return [g.op("ADD",g.op("FLOORMOD",a,g.c(4)),g.op("MUL",g.op("FLOORDIV",a,g.c(4)),g.c(4)))]
@case("divmod","const-quotient")
def _(g): a=g.var("a",0,9); return [g.op("FLOORDIV",a,g.c(10)), g.op("FLOORMOD",a,g.c(10))]
@case("divmod","split-const")
def _(g): a=g.var("a",0,99); return [g.op("FLOORDIV",g.op("ADD",a,g.c(9)),g.c(4))]
@case("divmod","symbolic-divisor-maybe-zero-kept")
def _(g): a=g.var("a",0,9); v=g.var("v",-1,1); return [g.op("FLOORDIV",g.op("MUL",a,v),v)]
@case("divmod","symbolic-divisor")
def _(g): a=g.var("a",0,9); v=g.var("v",1,4); return [g.op("FLOORDIV",g.op("MUL",a,v),v)]
@case("divmod","cdiv-kept")
def _(g): a=g.var("a",-5,5); return [g.op("CDIV",a,g.c(4)), g.op("CMOD",a,g.c(4))]
@case("divmod","range-mod-end")
def _(g):
    r=g.add("RANGE",W,[g.c(8)],[0,{"$":"AxisType","v":"LOOP"}]); return [g.op("FLOORMOD",r,g.c(8)), g.op("FLOORDIV",r,g.c(8))]
# ---------------- where / gates
@case("where","const-gate")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); return [g.op("WHERE",g.c(True,"bool"),a,b)]
@case("where","same-branches")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); return [g.op("WHERE",g.op("CMPLT",b,g.c(3)),a,a)]
@case("where","not-cond-swaps")
def _(g): a=g.var("a",0,9); b=g.var("b",0,9); c=g.op("CMPLT",b,g.c(3)); return [g.op("WHERE",g.op("CMPNE",c,g.c(True,"bool")),a,b)]
@case("where","nested-same-else")
def _(g):
    a=g.var("a",0,9); b=g.var("b",0,9); c1=g.op("CMPLT",a,g.c(3)); c2=g.op("CMPLT",b,g.c(4))
    return [g.op("WHERE",c1,g.op("WHERE",c2,a,b),b)]
@case("where","closure")
def _(g):
    a=g.var("a",0,9); b=g.var("b",0,9); c=g.op("CMPLT",a,g.c(3))
    return [g.op("WHERE",c,g.op("ADD",b,g.op("CAST",c,dtype=W)),b)]
@case("where","valid-narrows-gated-index")
def _(g): a=g.var("a",0,15); return [g.op("WHERE",g.op("CMPLT",a,g.c(4)),g.op("FLOORMOD",a,g.c(8)),g.inv())]
@case("where","valid-clauses")
def _(g): a=g.var("a",0,15); return [g.op("AND",g.op("CMPLT",a,g.c(4)),g.op("CMPLT",a,g.c(6)))]
@case("where","valid-kept")
def _(g): a=g.var("a",0,15); return [g.op("WHERE",g.op("CMPLT",a,g.c(12)),g.op("FLOORMOD",a,g.c(8)),g.inv())]
# the kernel that kernel-split makes of corpus case mv_pad_zero: simplify enters the CALL's body
RAW["kernel-body"] = r'''{"format":"uopc-graph","version":1,"producer":{"name":"tinygrad","version":"0.13.0","commit":"d1c3ae0f91"},"semantics":{"pad_fill":"invalid"},"nodes":[
{"id":0,"op":"CONST","dtype":"weakint","arg":42},
{"id":1,"op":"PARAM","dtype":"float32","src":[0],"arg":{"$":"ParamArg","slot":0,"dtype":{"$":"DType","v":"float32"},"device":"CPU"}},
{"id":2,"op":"CONST","dtype":"weakint","arg":7},
{"id":3,"op":"RANGE","dtype":"weakint","src":[2],"arg":[1,{"$":"AxisType","v":"LOOP"}]},
{"id":4,"op":"CONST","dtype":"weakint","arg":6},
{"id":5,"op":"RANGE","dtype":"weakint","src":[4],"arg":[0,{"$":"AxisType","v":"LOOP"}]},
{"id":6,"op":"MUL","dtype":"weakint","src":[5,2]},
{"id":7,"op":"ADD","dtype":"weakint","src":[3,6]},
{"id":8,"op":"INDEX","dtype":"float32","src":[1,7]},
{"id":9,"op":"CONST","dtype":"weakint","arg":0},
{"id":10,"op":"CMPLT","dtype":"bool","src":[9,5]},
{"id":11,"op":"CONST","dtype":"weakint","arg":4},
{"id":12,"op":"CMPLT","dtype":"bool","src":[5,11]},
{"id":13,"op":"AND","dtype":"bool","src":[10,12]},
{"id":14,"op":"CMPLT","dtype":"bool","src":[3,11]},
{"id":15,"op":"AND","dtype":"bool","src":[13,14]},
{"id":16,"op":"CONST","dtype":"float32","arg":{"$":"float","v":"1.0"}},
{"id":17,"op":"CAST","dtype":"bool","src":[16],"arg":{"$":"DType","v":"bool"}},
{"id":18,"op":"CONST","dtype":"bool","arg":false},
{"id":19,"op":"WHERE","dtype":"bool","src":[15,17,18]},
{"id":20,"op":"CONST","dtype":"weakint","arg":12},
{"id":21,"op":"PARAM","dtype":"float32","src":[20],"arg":{"$":"ParamArg","slot":1,"dtype":{"$":"DType","v":"float32"},"device":"CPU"}},
{"id":22,"op":"CONST","dtype":"weakint","arg":-1},
{"id":23,"op":"ADD","dtype":"weakint","src":[5,22]},
{"id":24,"op":"MUL","dtype":"weakint","src":[23,11]},
{"id":25,"op":"ADD","dtype":"weakint","src":[3,24]},
{"id":26,"op":"INDEX","dtype":"float32","src":[21,25]},
{"id":27,"op":"CONST","dtype":"float32","arg":{"$":"Invalid"}},
{"id":28,"op":"WHERE","dtype":"float32","src":[15,26,27]},
{"id":29,"op":"CONST","dtype":"float32","arg":{"$":"float","v":"0.0"}},
{"id":30,"op":"WHERE","dtype":"float32","src":[19,28,29]},
{"id":31,"op":"ADD","dtype":"float32","src":[30,29]},
{"id":32,"op":"STORE","dtype":"void","src":[8,31]},
{"id":33,"op":"END","dtype":"void","src":[32,5,3]},
{"id":34,"op":"SINK","dtype":"void","src":[33],"arg":{"$":"KernelInfo","name":"k0"}},
{"id":35,"op":"CALL","dtype":"void","src":[34,1,21]},
{"id":36,"op":"AFTER","dtype":"float32","src":[1,35]},
{"id":37,"op":"SINK","dtype":"void","src":[36]}
],"root":37}'''
@case("where","kernel-body")
def _(g): return None

# ---------------- invalid
@case("invalid","alu-moves-inside-gate")
def _(g): a=g.var("a",0,15); b=g.var("b",0,15); return [g.op("ADD",g.op("WHERE",g.op("CMPLT",b,g.c(4)),a,g.inv()),g.c(1))]
@case("invalid","false-gate-is-invalid")
def _(g): a=g.var("a",0,15); return [g.op("WHERE",g.op("CMPLT",a,g.c(0)),a,g.inv())]
@case("invalid","invalid-true-branch-normalized")
def _(g): a=g.var("a",0,15); b=g.var("b",0,15); return [g.op("WHERE",g.op("CMPLT",b,g.c(4)),g.inv(),a)]
@case("invalid","gated-load-store-fold")
def _(g):
    p=tensor_f32(g,0,16); a=g.var("a",0,15)
    ld=g.add("LOAD","float32",[g.add("INDEX","float32",[p,g.op("WHERE",g.op("CMPLT",a,g.c(0)),a,g.inv())])])
    st=g.add("STORE","void",[g.add("INDEX","float32",[p,g.op("WHERE",g.op("CMPLT",a,g.c(0)),a,g.inv())]),g.c(1.0,"float32")])
    return [ld, st]
@case("invalid","gated-load-kept")
def _(g):
    p=tensor_f32(g,0,16); a=g.var("a",0,15)
    return [g.add("LOAD","float32",[g.add("INDEX","float32",[p,g.op("WHERE",g.op("CMPLT",a,g.c(4)),a,g.inv())])])]
@case("invalid","store-gated-value")
def _(g):
    p=tensor_f32(g,0,16); a=g.var("a",0,15); x=scalar_f32(g,1)
    return [g.add("STORE","void",[g.add("INDEX","float32",[p,a]),g.op("WHERE",g.op("CMPLT",a,g.c(4)),x,g.inv("float32"))])]
# ---------------- cast
@case("cast","round-trip")
def _(g): a=g.op("CAST",g.var("a",0,9),dtype="int8"); return [g.op("CAST",g.op("CAST",a,dtype="int32"),dtype="int8")]
@case("cast","narrowing-round-trip-kept")
def _(g): a=g.var("a",0,300); return [g.op("CAST",g.op("CAST",a,dtype="int8"),dtype=W)]
@case("cast","fits-round-trip")
def _(g): a=g.var("a",0,100); return [g.op("CAST",g.op("CAST",a,dtype="int8"),dtype=W)]
@case("cast","to-bool")
def _(g): a=g.var("a",-3,9); return [g.op("CAST",a,dtype="bool")]
@case("cast","int64-narrowed")
def _(g):
    a=g.op("CAST",g.var("a",0,9),dtype="int64"); b=g.op("CAST",g.var("b",0,9),dtype="int64"); return [g.op("MUL",a,b)]
@case("cast","int64-wide-kept")
def _(g):
    a=g.op("CAST",g.var("a",0,1<<40),dtype="int64"); b=g.op("CAST",g.var("b",0,9),dtype="int64"); return [g.op("MUL",a,b)]
@case("cast","bool-cast-ne")
def _(g): a=g.var("a",0,9); c=g.op("CMPLT",a,g.c(3)); return [g.op("CMPNE",g.op("CAST",c,dtype="int32"),g.c(1,"int32"))]
# ---------------- constfold
@case("constfold","int32-wraps")
def _(g): return [g.op("ADD",g.c(2147483647,"int32"),g.c(1,"int32"))]
@case("constfold","uint8-wraps")
def _(g): return [g.op("ADD",g.c(250,"uint8"),g.c(10,"uint8"))]
@case("constfold","c-vs-floor-division")
def _(g):
    m,t=g.c(-7,"int32"),g.c(2,"int32")
    return [g.op("CDIV",m,t),g.op("FLOORDIV",m,t),g.op("CMOD",m,t),g.op("FLOORMOD",m,t)]
@case("constfold","shifts")
def _(g): return [g.op("SHL",g.c(1,"int32"),g.c(40,"int32")), g.op("SHR",g.c(-8,"int32"),g.c(1,"int32"))]
@case("constfold","float-specials")
def _(g): return [g.op("RECIPROCAL",g.c(0.0,"float32")), g.op("SQRT",g.c(-1.0,"float32")), g.op("MUL",g.c("inf","float32"),g.c(0.0,"float32"))]
@case("constfold","casts")
def _(g): return [g.op("CAST",g.c(3.7,"float32"),dtype="int32"), g.op("CAST",g.c(300,"int32"),dtype="uint8"), g.op("BITCAST",g.c(1.0,"float32"),dtype="int32")]
@case("constfold","weakint-overflow-kept")
def _(g): return [g.op("MUL",g.c(1<<62),g.c(4))]
@case("constfold","div-by-zero-const")
def _(g): return [g.op("FLOORDIV",g.c(7,"int32"),g.c(0,"int32")), g.op("FLOORMOD",g.c(7,"int32"),g.c(0,"int32"))]


def V(n, name): return '{"id":[[%s:[0-9]+]],"op":"PARAM",{{.*}}"name":"%s"}' % (n, name)
def K(n, val, dt="weakint"): return '{"id":[[%s:[0-9]+]],"op":"CONST","dtype":"%s","arg":%s}' % (n, dt, val)
def N(n, op, dt, *src):
    s = '{"id":[[%s:[0-9]+]],"op":"%s","dtype":"%s"' % (n, op, dt)
    if src: s += ',"src":{{\\[}}' + ",".join("{{[0-9]+}}" if x == "_" else "[[%s]]" % x for x in src) + '{{\\]}}'
    return s
def SINK(*src): return '"op":"SINK","dtype":"void","src":{{\\[}}' + ",".join("{{[0-9]+}}" if x == "_" else "[[%s]]" % x for x in src) + '{{\\]}}'
HEAD = {
 "arithmetic": "Arithmetic identities, canonical forms and combining terms (lib/Passes/Symbolic/Arithmetic.cpp).",
 "compare": "Comparisons and MAX: folds the range analysis decides, lt rewrites (lib/Passes/Symbolic/Compare.cpp).",
 "divmod": "Floor division and modulo of index expressions (lib/Passes/Symbolic/DivMod.cpp).",
 "where": "WHERE folding and valid masks of gated indices (Where.cpp, Valid.cpp).",
 "invalid": "Invalid gates: ALU ops move inside the gate, always-false gated LOAD/STORE fold (Where.cpp).",
 "cast": "CAST chains, casts to bool and narrowing int64 math (lib/Passes/Symbolic/Cast.cpp).",
 "constfold": "Constant folding with the target's per-dtype semantics (lib/Passes/Symbolic/ConstFold.cpp).",
}
# case -> (comment, [check lines]); prefix is the case name upper-cased
CHK = {
 "add-zero": ("x+0 -> x", [V("A","a"), "NOT: \"op\":\"ADD\"", SINK("A")]),
 "mul-one": ("1*x -> x (either operand order)", [V("A","a"), "NOT: \"op\":\"MUL\"", SINK("A")]),
 "mul-zero-int": ("x*0 -> 0 for integers", [K("Z","0"), "NEXT: "+SINK("Z")]),
 "mul-zero-float-kept": ('NOT folded: x*0 on a float may be NaN (x NaN or inf)', ['{"id":[[X:[0-9]+]],"op":"RESHAPE","dtype":"float32"', '{"id":[[Z:[0-9]+]],"op":"CONST","dtype":"float32","arg":{"$":"float","v":"0.0"}}', '{"id":[[M:[0-9]+]],"op":"MUL","dtype":"float32","src":{{\\[}}[[X]],[[Z]]{{\\]}}', 'NEXT: "op":"SINK","dtype":"void","src":{{\\[}}[[M]]{{\\]}}']),
 "combine-terms": ("a*3 + a*4 -> a*7", [V("A","a"), K("C","7"), N("M","MUL","weakint","A","C"), "NEXT: "+SINK("M")]),
 "sub-canonical": ("a-b -> a+b*-1 (tinygrad's spelling)", [V("A","a"), V("B","b"), K("C","-1"), N("M","MUL","weakint","B","C"), N("S","ADD","weakint","A","M"), "NOT: \"op\":\"SUB\""]),
 "two-stage": ("(a+3)+5 -> a+8", [V("A","a"), K("C","8"), N("S","ADD","weakint","A","C"), "NEXT: "+SINK("S")]),
 "move-const": ("(a+3)+b -> (a+b)+3", [V("A","a"), V("B","b"), N("S","ADD","weakint","A","B"), K("C","3"), N("T","ADD","weakint","S","C"), "NEXT: "+SINK("T")]),
 "div-self": ("a//a -> 1 when a is never 0", [K("C","1"), "NEXT: "+SINK("C")]),
 "div-self-maybe-zero-kept": ("NOT folded: a//a with a in [0, 9] is 0 at a = 0", [V("A","a"), N("D","FLOORDIV","weakint","A","A")]),
 "bool-mul-is-and": ("bool x*y -> x&y", [N("X","CMPLT","bool"), N("Y","CMPLT","bool"), N("R","AND","bool","X","Y"), "NOT: \"op\":\"MUL\""]),
 "tensor-kept": ("NOT rewritten: tensor-valued nodes (shape (4,)) are left to later passes, even x*1 and x+0", [N("M","MUL","float32"), N("S","ADD","float32"), SINK("M","S")]),
 "int32-two-stage": ('int32 (a+2147483647)+1 -> a+(-2147483648): constants fold with wraparound', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[X:[0-9]+]],"op":"CAST","dtype":"int32","src":{{\\[}}[[A]]{{\\]}}', '{"id":[[C:[0-9]+]],"op":"CONST","dtype":"int32","arg":-2147483648}', '{"id":[[S:[0-9]+]],"op":"ADD","dtype":"int32","src":{{\\[}}[[X]],[[C]]{{\\]}}', 'NEXT: "op":"SINK","dtype":"void","src":{{\\[}}[[S]]{{\\]}}']),
 # compare
 "range-decided": ("a in [0, 9]: a<10 -> True, a<0 -> False, a!=12 -> True", [K("T","true","bool"), K("F","false","bool"), SINK("T","F","T")]),
 "range-undecided-kept": ("NOT folded: a<5 with a in [0, 9]", [V("A","a"), K("C","5"), N("L","CMPLT","bool","A","C")]),
 "lt-self": ("x<x -> False", [K("F","false","bool"), "NEXT: "+SINK("F")]),
 "add-const-lt": ("a*b+3 < 7 -> a*b < 4 (weakint: no wraparound)", [N("M","MUL","weakint"), K("C","4"), N("L","CMPLT","bool","M","C"), "NEXT: "+SINK("L")]),
 "int32-add-const-lt-kept": ("NOT rewritten: int32 a+5 may wrap around, so a+5<3 is not a<-2", [N("S","ADD","int32"), K("C","3","int32"), N("L","CMPLT","bool","S","C")]),
 "div-lt": ("a//4 < 3 -> a < 12", [V("A","a"), K("C","12"), N("L","CMPLT","bool","A","C"), "NEXT: "+SINK("L")]),
 "max-folded": ("a in [0, 9]: max(a,10) -> 10, max(a,-1) -> a", [K("T","10"), V("A","a"), SINK("T","A")]),
 "max-kept": ("NOT folded: max(a,5) with a in [0, 9]", [N("M","MAX","weakint")]),
 "eq-kept": ("NOT rewritten: a==b stays one CMPEQ (tinygrad spells it !(a!=b); later passes match on CMPEQ)", [V("A","a"), V("B","b"), N("E","CMPEQ","bool","A","B"), "NEXT: "+SINK("E")]),
 "eq-self": ("x==x -> True for integers", [K("T","true","bool"), "NEXT: "+SINK("T")]),
 "lt-folding": ("a*4+b < 8 with b in [0, 3] -> a < 2", [V("A","a"), K("C","2"), N("L","CMPLT","bool","A","C"), "NEXT: "+SINK("L")]),
 "float-lt-self": ("x<x -> False holds for floats too (NaN<NaN is False)", [K("F","false","bool"), "NEXT: "+SINK("F")]),
 # divmod
 "div-strided": ("(a*4+b)//4 -> a with b in [0, 3]", [V("A","a"), "NOT: \"op\":\"FLOORDIV\"", SINK("A")]),
 "mod-strided": ("(a*4+b)%4 -> b with b in [0, 3]", [V("B","b"), "NOT: \"op\":\"FLOORMOD\"", SINK("B")]),
 "div-strided-overlap-kept": ("NOT folded to a: b in [0, 4] reaches the next multiple; (a*4+b)//4 -> a + b//4", [V("A","a"), V("B","b"), K("C","4"), N("D","FLOORDIV","weakint","B","C"), N("S","ADD","weakint","A","D"), "NEXT: "+SINK("S")]),
 "nested-mod-div": ("(a%12)//4 -> (a//4)%3", [V("A","a"), K("C","4"), N("D","FLOORDIV","weakint","A","C"), K("K","3"), N("M","FLOORMOD","weakint","D","K"), "NEXT: "+SINK("M")]),
 "recombine": ("a%4 + (a//4)*4 -> a", [V("A","a"), "NEXT: "+SINK("A")]),
 "const-quotient": ("a in [0, 9]: a//10 -> 0, a%10 -> a", [K("Z","0"), V("A","a"), SINK("Z","A")]),
 "split-const": ("(a+9)//4 -> (a+1)//4 + 2", [V("A","a"), K("O","1"), N("S","ADD","weakint","A","O"), K("F","4"), N("D","FLOORDIV","weakint","S","F"), K("T","2"), N("R","ADD","weakint","D","T")]),
 "symbolic-divisor-maybe-zero-kept": ('NOT folded: (a*v)//v with v in [-1, 1] is 0 at v = 0, not a', ['{"id":[[V:[0-9]+]],"op":"PARAM",{{.*}}"name":"v"}', '{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[M:[0-9]+]],"op":"MUL","dtype":"weakint","src":{{\\[}}[[V]],[[A]]{{\\]}}', '{"id":[[D:[0-9]+]],"op":"FLOORDIV","dtype":"weakint","src":{{\\[}}[[M]],[[V]]{{\\]}}']),
 "symbolic-divisor": ("(a*v)//v -> a with v in [1, 4]", [V("A","a"), "NOT: \"op\":\"FLOORDIV\"", SINK("A")]),
 "cdiv-kept": ('NOT rewritten by the floor rules: C division and modulo of a in [-5, 5]', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[C:[0-9]+]],"op":"CONST","dtype":"weakint","arg":4}', '{"id":[[D:[0-9]+]],"op":"CDIV","dtype":"weakint","src":{{\\[}}[[A]],[[C]]{{\\]}}', '{"id":[[M:[0-9]+]],"op":"CMOD","dtype":"weakint","src":{{\\[}}[[A]],[[C]]{{\\]}}']),
 "range-mod-end": ("a RANGE of end 8: r%8 -> r, r//8 -> 0", [N("R","RANGE","weakint"), K("Z","0"), "NEXT: "+SINK("R","Z")]),
 # where
 "const-gate": ("True ? a : b -> a", [V("A","a"), "NOT: \"op\":\"WHERE\"", SINK("A")]),
 "same-branches": ("c ? a : a -> a", [V("A","a"), "NOT: \"op\":\"WHERE\"", SINK("A")]),
 "not-cond-swaps": ("!c ? a : b -> c ? b : a", [V("B","b"), N("C","CMPLT","bool","B","_"), V("A","a"), N("W","WHERE","weakint","C","B","A"), "NEXT: "+SINK("W")]),
 "nested-same-else": ('c1 ? (c2 ? a : b) : b -> (c1&c2) ? a : b', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[C1:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[A]],{{[0-9]+}}{{\\]}}', '{"id":[[B:[0-9]+]],"op":"PARAM",{{.*}}"name":"b"}', '{"id":[[C2:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[B]],{{[0-9]+}}{{\\]}}', '{"id":[[C:[0-9]+]],"op":"AND","dtype":"bool","src":{{\\[}}[[C1]],[[C2]]{{\\]}}', '{"id":[[W:[0-9]+]],"op":"WHERE","dtype":"weakint","src":{{\\[}}[[C]],[[A]],[[B]]{{\\]}}']),
 "closure": ('c ? b+int(c) : b -> c ? b+1 : b (c is True inside its true branch)', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[C:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[A]],{{[0-9]+}}{{\\]}}', '{"id":[[B:[0-9]+]],"op":"PARAM",{{.*}}"name":"b"}', '{"id":[[O:[0-9]+]],"op":"CONST","dtype":"weakint","arg":1}', '{"id":[[S:[0-9]+]],"op":"ADD","dtype":"weakint","src":{{\\[}}[[B]],[[O]]{{\\]}}', '{"id":[[W:[0-9]+]],"op":"WHERE","dtype":"weakint","src":{{\\[}}[[C]],[[S]],[[B]]{{\\]}}', 'NOT: "op":"CAST"']),
 "valid-narrows-gated-index": ("a<4 ? a%8 : Invalid -> a<4 ? a : Invalid (a%8 is a under the gate)", [V("A","a"), N("C","CMPLT","bool","A","_"), K("I",'{"$":"Invalid"}'), N("W","WHERE","weakint","C","A","I"), "NOT: \"op\":\"FLOORMOD\""]),
 "valid-clauses": ("(a<4)&(a<6) -> a<4", [V("A","a"), K("C","4"), N("L","CMPLT","bool","A","C"), "NEXT: "+SINK("L")]),
 "valid-kept": ('NOT narrowed: under a<12, a%8 is not a', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[C:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[A]],{{[0-9]+}}{{\\]}}', '{"id":[[M:[0-9]+]],"op":"FLOORMOD","dtype":"weakint","src":{{\\[}}[[A]],{{[0-9]+}}{{\\]}}', '{"id":[[I:[0-9]+]],"op":"CONST","dtype":"weakint","arg":{"$":"Invalid"}}', '{"id":[[W:[0-9]+]],"op":"WHERE","dtype":"weakint","src":{{\\[}}[[C]],[[M]],[[I]]{{\\]}}']),
 "kernel-body": ("inside a kernel (a CALL's SINK body): c ? (c ? y[i] : Invalid) : 0.0 with c a constant-folded\n"
                 "# bool(1.0) gate, plus x+0.0, become one c ? y[i] : 0.0", [N("X","INDEX","float32"), N("Y","INDEX","float32"),
                 K("Z",'{"$":"float","v":"0.0"}',"float32"), N("W","WHERE","float32","_","Y","Z"), N("S","STORE","void","X","W"), "NOT: \"op\":\"WHERE\"",
                 N("K","SINK","void"), N("C","CALL","void","K","_","_")]),
 # invalid
 "alu-moves-inside-gate": ("(c ? a : Invalid) + 1 -> c ? a+1 : Invalid", [V("B","b"), N("C","CMPLT","bool","B","_"), V("A","a"), K("O","1"), N("S","ADD","weakint","A","O"), K("I",'{"$":"Invalid"}'), N("W","WHERE","weakint","C","S","I"), "NEXT: "+SINK("W")]),
 "false-gate-is-invalid": ("a<0 is always False for a in [0, 15]: the gated value is Invalid", [K("I",'{"$":"Invalid"}'), "NEXT: "+SINK("I")]),
 "invalid-true-branch-normalized": ('c ? Invalid : a -> !c ? a : Invalid', ['{"id":[[B:[0-9]+]],"op":"PARAM",{{.*}}"name":"b"}', '{"id":[[C:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[B]],{{[0-9]+}}{{\\]}}', '{"id":[[T:[0-9]+]],"op":"CONST","dtype":"bool","arg":true}', '{"id":[[N:[0-9]+]],"op":"CMPNE","dtype":"bool","src":{{\\[}}[[C]],[[T]]{{\\]}}', '{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[I:[0-9]+]],"op":"CONST","dtype":"weakint","arg":{"$":"Invalid"}}', '{"id":[[W:[0-9]+]],"op":"WHERE","dtype":"weakint","src":{{\\[}}[[N]],[[A]],[[I]]{{\\]}}']),
 "gated-load-store-fold": ("a load and a store whose gate is always false: the load is 0, the store a NOOP", [K("Z",'{"$":"float","v":"0.0"}',"float32"), N("S","NOOP","void"), "NEXT: "+SINK("Z","S"), "NOT: \"op\":\"LOAD\""]),
 "gated-load-kept": ('NOT folded: a load gated by a<4 (sometimes true) stays, with its Invalid (removed only at codegen)', ['{"id":[[P:[0-9]+]],"op":"PARAM","dtype":"float32"', '{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[C:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[A]],{{[0-9]+}}{{\\]}}', '{"id":[[I:[0-9]+]],"op":"CONST","dtype":"weakint","arg":{"$":"Invalid"}}', '{"id":[[W:[0-9]+]],"op":"WHERE","dtype":"weakint","src":{{\\[}}[[C]],[[A]],[[I]]{{\\]}}', '{"id":[[X:[0-9]+]],"op":"INDEX","dtype":"float32","src":{{\\[}}[[P]],[[W]]{{\\]}}', '{"id":[[L:[0-9]+]],"op":"LOAD","dtype":"float32","src":{{\\[}}[[X]]{{\\]}}']),
 "store-gated-value": ('x[a] = (a<4 ? v : Invalid) -> x[a<4 ? a : Invalid] = v', ['{"id":[[P:[0-9]+]],"op":"PARAM","dtype":"float32"', '{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[C:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[A]],{{[0-9]+}}{{\\]}}', '{"id":[[I:[0-9]+]],"op":"CONST","dtype":"weakint","arg":{"$":"Invalid"}}', '{"id":[[W:[0-9]+]],"op":"WHERE","dtype":"weakint","src":{{\\[}}[[C]],[[A]],[[I]]{{\\]}}', '{"id":[[X:[0-9]+]],"op":"INDEX","dtype":"float32","src":{{\\[}}[[P]],[[W]]{{\\]}}', '{"id":[[V:[0-9]+]],"op":"RESHAPE","dtype":"float32"', '{"id":[[S:[0-9]+]],"op":"STORE","dtype":"void","src":{{\\[}}[[X]],[[V]]{{\\]}}']),
 # cast
 "round-trip": ('int8(int32(x)) -> x for an int8 x', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[X:[0-9]+]],"op":"CAST","dtype":"int8","src":{{\\[}}[[A]]{{\\]}}', 'NEXT: "op":"SINK","dtype":"void","src":{{\\[}}[[X]]{{\\]}}']),
 "narrowing-round-trip-kept": ('NOT removed: weakint(int8(a)) with a in [0, 300] wraps', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[X:[0-9]+]],"op":"CAST","dtype":"int8","src":{{\\[}}[[A]]{{\\]}}', '{"id":[[Y:[0-9]+]],"op":"CAST","dtype":"weakint","src":{{\\[}}[[X]]{{\\]}}']),
 "fits-round-trip": ("weakint(int8(a)) -> a when a in [0, 100] fits int8", [V("A","a"), "NOT: \"op\":\"CAST\"", SINK("A")]),
 "to-bool": ("bool(a) -> a!=0", [V("A","a"), K("Z","0"), N("N","CMPNE","bool","A","Z"), "NOT: \"op\":\"CAST\""]),
 "int64-narrowed": ('int64 a*b with a, b in [0, 9] is computed in int32', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[X:[0-9]+]],"op":"CAST","dtype":"int32","src":{{\\[}}[[A]]{{\\]}}', '{"id":[[B:[0-9]+]],"op":"PARAM",{{.*}}"name":"b"}', '{"id":[[Y:[0-9]+]],"op":"CAST","dtype":"int32","src":{{\\[}}[[B]]{{\\]}}', '{"id":[[M:[0-9]+]],"op":"MUL","dtype":"int32","src":{{\\[}}[[X]],[[Y]]{{\\]}}', '{"id":[[R:[0-9]+]],"op":"CAST","dtype":"int64","src":{{\\[}}[[M]]{{\\]}}', 'NEXT: "op":"SINK","dtype":"void","src":{{\\[}}[[R]]{{\\]}}']),
 "int64-wide-kept": ("NOT narrowed: a in [0, 2^40] does not fit int32", [N("M","MUL","int64"), "NOT: \"dtype\":\"int32\""]),
 "bool-cast-ne": ('int32(c) != 1 -> !c', ['{"id":[[A:[0-9]+]],"op":"PARAM",{{.*}}"name":"a"}', '{"id":[[C:[0-9]+]],"op":"CMPLT","dtype":"bool","src":{{\\[}}[[A]],{{[0-9]+}}{{\\]}}', '{"id":[[T:[0-9]+]],"op":"CONST","dtype":"bool","arg":true}', '{"id":[[N:[0-9]+]],"op":"CMPNE","dtype":"bool","src":{{\\[}}[[C]],[[T]]{{\\]}}', 'NOT: "op":"CAST"']),
 # constfold
 "int32-wraps": ("int32 2147483647+1 -> -2147483648", [K("C","-2147483648","int32"), "NEXT: "+SINK("C")]),
 "uint8-wraps": ("uint8 250+10 -> 4", [K("C","4","uint8"), "NEXT: "+SINK("C")]),
 "c-vs-floor-division": ("-7 and 2: CDIV -3, FLOORDIV -4, CMOD -1, FLOORMOD 1", [K("A","-3","int32"), K("B","-4","int32"), K("C","-1","int32"), K("D","1","int32"), "NEXT: "+SINK("A","B","C","D")]),
 "shifts": ("int32 1<<40 -> 0 (shifted out), -8>>1 -> -4 (arithmetic)", [K("A","0","int32"), K("B","-4","int32"), "NEXT: "+SINK("A","B")]),
 "float-specials": ("1/0.0 -> inf, sqrt(-1) -> nan, inf*0 -> nan", [K("A",'{"$":"float","v":"inf"}',"float32"), K("B",'{"$":"float","v":"nan"}',"float32"), "NEXT: "+SINK("A","B","B")]),
 "casts": ("int32(3.7f) -> 3, uint8(300) -> 44, bitcast<int32>(1.0f) -> 1065353216", [K("A","3","int32"), K("B","44","uint8"), K("C","1065353216","int32")]),
 "weakint-overflow-kept": ('NOT folded: weakint 2^62*4 leaves int64 (weakint is unbounded)', ['{"id":[[A:[0-9]+]],"op":"CONST","dtype":"weakint","arg":4}', '{"id":[[B:[0-9]+]],"op":"CONST","dtype":"weakint","arg":4611686018427387904}', '{"id":[[M:[0-9]+]],"op":"MUL","dtype":"weakint","src":{{\\[}}[[A]],[[B]]{{\\]}}']),
 "div-by-zero-const": ("7//0 -> 0 and 7%0 -> 7, as the evaluator defines them", [K("A","0","int32"), K("B","7","int32"), "NEXT: "+SINK("A","B")]),
}
def cname(n): return n.upper()

def write(grp):
    out = [f"# {HEAD[grp]}",
           "# One case per block: the input graph, then the checks on the output of verify,simplify. Cases whose",
           "# name ends in -kept are negative: a rule that must not fire. Regenerate with",
           "# test/lit/passes/Inputs/simplify-cases.py (inputs and checks are tables there).",
           "# RUN: rm -rf %t && split-file %s %t", ""]
    for name, f in C[grp]:
        g = G(); roots = f(g)
        doc = RAW[name] if roots is None else g.dump(*roots).rstrip("\n")
        comment, checks = CHK[name]
        p = cname(name)
        defined = set()
        for c in checks:
            defined.update(re.findall(r"\[\[([A-Z0-9]+):", c))
            for u in re.findall(r"\[\[([A-Z0-9]+)\]\]", c):
                assert u in defined, f"{name}: check uses [[{u}]] before defining it"
        out.append(f"#--- {name}.checks")
        out.append(f"# {comment}")
        out.append(f"# RUN: %uopc %t/{name}.json --pass-pipeline=verify,simplify --emit graph -o %t/{name}")
        out.append(f"# RUN: FileCheck %s --check-prefix={p} < %t/{name}/graph.json")
        for c in checks:
            m = re.match(r"(NOT|NEXT): (.*)", c)
            out.append(f"# {p}-{m.group(1)}: {m.group(2)}" if m else f"# {p}: {c}")
        out.append(f"#--- {name}.json")
        out.append(doc)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", f"simplify-{grp}.test")
    open(path, "w").write("\n".join(out) + "\n")

if __name__ == "__main__":
    for grp in sys.argv[1:] or HEAD:
        write(grp)
