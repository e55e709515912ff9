"""``dumpsys``: the sections tools parse, in Android 14's layout.

Only the lines parsers look for are guaranteed; the surrounding lines are there so
``grep``-based tools and humans see something that looks like a phone.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from farm.sim.shell.commands.names import (
    activity_record,
    ident_hash,
    long_component,
    pid_of,
    short_component,
    uid_of,
    window_name,
)
from farm.sim.shell.commands.registry import command
from farm.sim.shell.commands.screen import DISPLAY_ID
from farm.sim.shell.context import Phone, Proc
from farm.sim.spec import ActivityRecord

SEPARATOR = "-" * 79


# -- battery -------------------------------------------------------------------------
def battery(phone: Phone, args: list[str]) -> tuple[str, int]:
    b = phone.faults.battery
    if args:
        return _battery_command(phone, args)
    o = phone.battery_override
    level = o.get("level", b.current_level(phone.faults.clock()))
    usb = bool(o.get("usb", int(b.plugged_usb)))
    ac = bool(o.get("ac", 0))
    wireless = bool(o.get("wireless", 0))
    powered = usb or ac or wireless
    status = o.get("status", (5 if level >= 100 else 2) if powered else 3)
    lines = ["Current Battery Service state:"]
    if o:
        lines.append("  (UPDATES STOPPED -- use 'reset' to restart)")
    lines += [
        f"  AC powered: {str(ac).lower()}",
        f"  USB powered: {str(usb).lower()}",
        f"  Wireless powered: {str(wireless).lower()}",
        "  Dock powered: false",
        f"  Max charging current: {500000 if powered else 0}",
        f"  Max charging voltage: {5000000 if powered else 0}",
        f"  Charge counter: {level * 38470}",
        f"  status: {status}",
        f"  health: {b.health}",
        f"  present: {str(bool(o.get('present', 1))).lower()}",
        f"  level: {level}",
        "  scale: 100",
        f"  voltage: {3500 + level * 10}",
        f"  temperature: {o.get('temp', b.temperature)}",
        "  technology: Li-ion",
        "  Charging state: 1",
        "  Charging policy: 1",
    ]
    return "\n".join(lines) + "\n", 0


_BATTERY_KEYS = {"ac", "usb", "wireless", "status", "level", "temp", "present", "counter",
                 "invalid"}


def _battery_command(phone: Phone, args: list[str]) -> tuple[str, int]:
    o = phone.battery_override
    if args[0] == "reset":
        o.clear()
        return "", 0
    if args[0] == "unplug":
        o.update(ac=0, usb=0, wireless=0)
        return "", 0
    if args[0] == "set" and len(args) == 3 and args[1] in _BATTERY_KEYS:
        try:
            o[args[1]] = int(args[2])
        except ValueError:
            return f"Bad value: {args[2]}\n", 255
        return "", 0
    return ("Battery service (battery) commands:\n  help\n    Print this help text.\n"
            "  set [-f] [ac|usb|wireless|status|level|temp|present|invalid] <value>\n"
            "    Force a battery property value, freezing battery state.\n"
            "  unplug [-f]\n    Force battery unplugged, freezing battery state.\n"
            "  reset [-f]\n    Unfreeze battery state, returning to current hardware values.\n",
            0)


# -- window --------------------------------------------------------------------------
def _focus_lines(phone: Phone) -> list[str]:
    world = phone.world
    focus = world.current_focus()
    stack = world.activity_stack()
    if world.shade_open:  # the pulled-down shade has the input focus
        shade = f"Window{{{ident_hash('win', 'com.android.systemui', 'NotificationShade')} u0 " \
                "NotificationShade}"
        lines = [f"  mCurrentFocus={shade}"]
    else:
        lines = [f"  mCurrentFocus={window_name(*focus) if focus else 'null'}"]
    lines.append(f"  mFocusedApp={activity_record(stack[0]) if stack else 'null'}")
    return lines


def _config(phone: Phone) -> str:
    w, h = _logical_size(phone)
    d = phone.wm_density or phone.spec.screen.density

    def dp(px: int) -> int:
        return px * 160 // d

    rot = phone.world.rotation % 4
    port = "port" if h >= w else "land"
    return (f"{{1.0 ?mcc?mnc [en_US] ldltr sw{dp(min(w, h))}dp w{dp(w)}dp h{dp(h)}dp {d}dpi "
            f"nrml long {port} finger qwerty/v/v -nav/h winConfig={{ mBounds=Rect(0, 0 - {w}, "
            f"{h}) mAppBounds=Rect(0, 0 - {w}, {h}) mMaxBounds=Rect(0, 0 - {w}, {h}) "
            f"mDisplayRotation=ROTATION_{rot * 90} mWindowingMode=fullscreen "
            f"mActivityType=undefined mAlwaysOnTop=undefined mRotation=ROTATION_{rot * 90}}} "
            "s.1 fontWeightAdjustment=0}")


def _window_windows(phone: Phone) -> list[str]:
    world = phone.world
    w, h = _logical_size(phone)
    stack = world.activity_stack()
    lines = ["WINDOW MANAGER WINDOWS (dumpsys window windows)"]
    n = 0

    def win(title: str, pkg: str, ty: str, visible: bool, task: int = 1) -> None:
        nonlocal n
        h_ = ident_hash("win", pkg, title)
        lines.extend([
            f"  Window #{n} Window{{{h_} u0 {title}}}:",
            f"    mDisplayId=0 rootTaskId={task} mSession=Session{{{ident_hash('s', pkg)} "
            f"{pid_of(pkg, world)}:u0a{uid_of(pkg) - 10000}}} mClient=android.os.BinderProxy@"
            f"{ident_hash('c', title)}",
            f"    mOwnerUid={uid_of(pkg)} showForAllUsers={str(ty != 'BASE_APPLICATION').lower()}"
            f" package={pkg} appop=NONE",
            f"    mAttrs={{(0,0)(fillxfill) sim={{adjust=resize}} ty={ty} fmt=TRANSLUCENT}}",
            f"    Requested w={w} h={h} mLayoutSeq=42",
            f"    mHasSurface={str(visible).lower()} isReadyForDisplay()={str(visible).lower()}"
            " mWindowRemovalAllowed=false",
        ])
        n += 1

    win("StatusBar", "com.android.systemui", "STATUS_BAR", world.screen_on)
    win("NotificationShade", "com.android.systemui", "NOTIFICATION_SHADE",
        world.screen_on and world.shade_open)
    win("NavigationBar0", "com.android.systemui", "NAVIGATION_BAR", world.screen_on)
    for i, r in enumerate(stack):
        win(long_component(r.package, r.activity), r.package, "BASE_APPLICATION", i == 0,
            r.task_id)
    lines += [
        "",
        f"  mGlobalConfiguration={_config(phone)}",
        "  mHasPermanentDpad=false",
        "  mTopFocusedDisplayId=0",
        "  mInTouchMode=true",
        *_focus_lines(phone),
    ]
    return lines


def _window_displays(phone: Phone) -> list[str]:
    pw, ph = phone.spec.screen.width, phone.spec.screen.height
    w, h = _logical_size(phone)
    d = phone.spec.screen.density
    rot = phone.world.rotation % 4
    return [
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)",
        "  Display: mDisplayId=0 rootTasks=3",
        f"    init={pw}x{ph} {d}dpi base={w}x{h} {phone.wm_density or d}dpi cur={w}x{h} "
        f"app={w}x{h}",
        "    deferred=false mLayoutNeeded=false",
        "",
        *_focus_lines(phone),
        "",
        "  DisplayRotation",
        "    mCurrentAppOrientation=SCREEN_ORIENTATION_UNSPECIFIED",
        f"    mRotation={rot} mDeferredRotationPauseCount=0",
        f"    mCurrentRotation=ROTATION_{rot * 90}",
        "    mUserRotationMode=USER_ROTATION_FREE mUserRotation=ROTATION_0",
    ]


def _window_policy(phone: Phone) -> list[str]:
    on = str(bool(phone.world.screen_on)).lower()
    return [
        "WINDOW MANAGER POLICY STATE (dumpsys window policy)",
        f"    mSafeMode=false mSystemReady=true mSystemBooted={str(phone.faults.boot_completed()).lower()}",  # noqa: E501
        f"    mAwake={on}",
        f"    mScreenOnEarly={on} mScreenOnFully={on}",
        "    mKeyguardDrawComplete=true mWindowManagerDrawComplete=true",
        f"    screenState={'SCREEN_STATE_ON' if phone.world.screen_on else 'SCREEN_STATE_OFF'}",
        "    KeyguardServiceDelegate",
        "      showing=false",
    ]


def window(phone: Phone, args: list[str]) -> tuple[str, int]:
    sub = args[0] if args else ""
    if sub in ("windows", "w"):
        lines = _window_windows(phone)
    elif sub in ("displays", "d"):
        lines = _window_displays(phone)
    elif sub in ("policy", "p"):
        lines = _window_policy(phone)
    elif sub in ("lastanr", "l"):
        lines = ["WINDOW MANAGER LAST ANR (dumpsys window lastanr)",
                 "  <no ANR has occurred since boot>"]
    else:
        lines = [*_window_policy(phone), SEPARATOR, *_window_displays(phone), SEPARATOR,
                 *_window_windows(phone)]
    return "\n".join(lines) + "\n", 0


# -- activity ------------------------------------------------------------------------
def _tasks(stack: list[ActivityRecord]) -> list[list[ActivityRecord]]:
    tasks: dict[int, list[ActivityRecord]] = {}
    for r in stack:
        tasks.setdefault(r.task_id, []).append(r)
    return list(tasks.values())


def _activities(phone: Phone) -> list[str]:
    stack = phone.world.activity_stack()
    lines = ["ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)",
             "Display #0 (activities from top to bottom):"]
    for ti, task in enumerate(_tasks(stack)):
        top = task[0]
        visible = str(ti == 0).lower()
        lines.append(
            f"  * Task{{{ident_hash('task', top.task_id)} #{top.task_id} type=standard "
            f"A={uid_of(top.package)}:{top.package} U=0 visible={visible} "
            f"visibleRequested={visible} mode=fullscreen translucent=false sz={len(task)}}}")
        lines.append(f"    mBounds=Rect(0, 0 - {phone.spec.screen.width}, "
                     f"{phone.spec.screen.height})")
        if ti == 0:
            lines.append(f"    mResumedActivity: {activity_record(top)}")
            lines.append(f"    topResumedActivity={activity_record(top)}")
        for j, r in enumerate(task):
            state = "RESUMED" if ti == 0 and j == 0 else "STOPPED"
            lines += [
                f"    * Hist  #{len(task) - 1 - j}: {activity_record(r)}",
                f"      packageName={r.package} processName={r.package}",
                "      launchedFromUid=2000 launchedFromPackage=com.android.shell "
                "launchedFromFeature=null userId=0",
                f"      app=ProcessRecord{{{ident_hash('proc', r.package)} "
                f"{pid_of(r.package, phone.world)}:{r.package}/u0a{uid_of(r.package) - 10000}}}",
                f"      Intent {{ act=android.intent.action.MAIN cat=[android.intent.category."
                f"LAUNCHER] flg=0x10200000 cmp={short_component(r.package, r.activity)} }}",
                f"      state={state} stopped={str(state == 'STOPPED').lower()} "
                "delayedResume=false finishing=false",
            ]
    lines.append("")
    if stack:
        lines += ["  Resumed activities in task display areas (from top to bottom):",
                  f"    ResumedActivity: {activity_record(stack[0])}", "",
                  f"  ResumedActivity: {activity_record(stack[0])}"]
    lines += ["", "ActivityTaskSupervisor state:",
              f"  mCurTaskIdForUser={{0={stack[0].task_id if stack else 0}}}",
              "  mUserRootTaskInFront={}", "  isHomeRecentsComponent=true"]
    return lines


def _top(phone: Phone) -> list[str]:
    stack = phone.world.activity_stack()
    if not stack:
        return []
    r = stack[0]
    h = ident_hash("ar", r.token)
    cls = r.activity.rsplit(".", 1)[-1]
    return [
        f"TASK {uid_of(r.package)}:{r.package} id={r.task_id} userId=0",
        f"  ACTIVITY {short_component(r.package, r.activity)} {h} "
        f"pid={pid_of(r.package, phone.world)}",
        f"    Local Activity {ident_hash('la', r.token)} State:",
        "      mResumed=true mStopped=false mFinished=false",
        "      mIsChangingConfigurations=false",
        "      mLoadersStarted=true",
        "    View Hierarchy:",
        f"      DecorView@{ident_hash('dv', r.token)}[{cls}]",
    ]


HOME_PACKAGE = "com.google.android.apps.nexuslauncher"


def _recents(phone: Phone) -> list[str]:
    """RecentTasks.dump: the launcher's recents component, then every task but home's,
    most recent first, with the fields ``Task.dump`` starts with."""
    stack = phone.world.activity_stack()
    lines = ["ACTIVITY MANAGER RECENT TASKS (dumpsys activity recents)",
             f"  mRecentsUid={uid_of(HOME_PACKAGE)}",
             f"  mRecentsComponent=ComponentInfo{{{HOME_PACKAGE}/"
             "com.android.quickstep.RecentsActivity}",
             "  mFreezeTaskListReordering=false",
             "  mFreezeTaskListReorderingPendingTimeout=false",
             "  Recent tasks:"]
    tasks = [t for t in _tasks(stack) if t[-1].package != HOME_PACKAGE]
    for i, task in enumerate(tasks):
        root, top = task[-1], task[0]
        visible = str(stack[0].task_id == root.task_id).lower()
        uid = uid_of(root.package)
        comp = long_component(root.package, root.activity)
        lines += [
            f"  * Recent #{i}: Task{{{ident_hash('task', root.task_id)} #{root.task_id} "
            f"type=standard A={uid}:{root.package} U=0 visible={visible} "
            f"visibleRequested={visible} mode=fullscreen translucent=false sz={len(task)}}}",
            f"    userId=0 effectiveUid=u0a{uid % 10000} mCallingUid=2000 "
            "mUserSetupComplete=true mCallingPackage=com.android.shell "
            "mCallingFeatureId=null",
            f"    affinity={uid}:{root.package}",
            "    intent={act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] "
            f"flg=0x10200000 cmp={short_component(root.package, root.activity)}}}",
            f"    mActivityComponent={short_component(root.package, root.activity)}",
            f"    realActivity={comp}",
            f"    topActivity={short_component(top.package, top.activity)}",
            "    rootWasReset=false mNeverRelinquishIdentity=true mReuseTask=false "
            "mLockTaskAuth=LOCK_TASK_AUTH_PINNABLE",
        ]
    return lines


def activity(phone: Phone, args: list[str]) -> tuple[str, int]:
    sub = args[0] if args else ""
    if sub == "top":
        lines = _top(phone)
    elif sub in ("activities", "a", ""):
        lines = _activities(phone)
    elif sub in ("recents", "r"):
        lines = _recents(phone)
    else:
        lines = []
    return ("\n".join(lines) + "\n") if lines else "", 0


def input_method(phone: Phone, args: list[str]) -> tuple[str, int]:
    """InputMethodManagerService.dump: the lines tools read (mInputShown, the focused
    editor's hintText/packageName) in their usual places."""
    shown, hint, pkg = phone.world.input_method_state()
    ime = phone.world.settings.get("secure", "default_input_method") or ""
    on = str(shown).lower()
    lines = [
        "Current Input Method Manager state:",
        f"  mCurMethodId={ime}",
        f"  mCurId={ime} mHaveConnection=true mBoundToMethod=true mVisibleBound={on}",
        "  mCurTokenDisplayId=0",
        f"  mCurIntent=Intent {{ act=android.view.InputMethod cmp={ime} }}",
        f"  mShowRequested={on} mShowExplicitlyRequested=false mShowForced=false "
        f"mInputShown={on}",
        "  mInFullscreenMode=false",
        "  mSystemReady=true mInteractive=true",
        "  mCurEditorInfo:",
        "    inputType=0x1 imeOptions=0x12000003 privateImeOptions=null",
        "    actionLabel=null actionId=0",
        "    initialSelStart=0 initialSelEnd=0 initialCapsMode=0x0",
        f"    hintText={hint or 'null'} label=null",
        f"    packageName={pkg} fieldId=-1 fieldName=null",
        "    extras=null",
    ]
    return "\n".join(lines) + "\n", 0


# -- display / input / power ---------------------------------------------------------
def _logical_size(phone: Phone) -> tuple[int, int]:
    w, h = phone.wm_size or (phone.spec.screen.width, phone.spec.screen.height)
    if phone.world.rotation % 2:
        w, h = h, w
    return w, h


def display(phone: Phone, args: list[str]) -> tuple[str, int]:
    rot = phone.world.rotation % 4
    w, h = _logical_size(phone)
    pw, ph = phone.spec.screen.width, phone.spec.screen.height
    d = phone.spec.screen.density
    on = "ON" if phone.world.screen_on else "OFF"
    # adbutils takes the first line matching orientation=N: the viewport must come first.
    lines = [
        "DISPLAY MANAGER (dumpsys display)",
        f"  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, "
        f"displayId=0, uniqueId='local:{DISPLAY_ID}', physicalPort=0, orientation={rot}, "
        f"logicalFrame=Rect(0, 0 - {w}, {h}), physicalFrame=Rect(0, 0 - {w}, {h}), "
        f"deviceWidth={w}, deviceHeight={h}}}]",
        "  mSafeMode=false",
        "  mPendingTraversal=false",
        f"  mGlobalDisplayState={on}",
        "",
        "Display Devices: size=1",
        f'  DisplayDeviceInfo{{"Built-in Screen": uniqueId="local:{DISPLAY_ID}", {pw} x {ph}, '
        f"modeId 1, renderFrameRate 60.0, defaultModeId 1, density {d}, {d}.0 x {d}.0 dpi, "
        f"touch INTERNAL, rotation 0, type INTERNAL, state {on}, "
        "FLAG_ALLOWED_TO_BE_DEFAULT_DISPLAY, FLAG_ROTATES_WITH_CONTENT, FLAG_SECURE}",
        "",
        "Logical Displays: size=1",
        "  Display 0:",
        "    mDisplayId=0",
        "    mLayerStack=0",
        "    mHasContent=true",
        f'    mBaseDisplayInfo=DisplayInfo{{"Built-in Screen", displayId 0, real {w} x {h}, '
        f"largest app {w} x {h}, smallest app {w} x {h}, density {d} ({d}.0 x {d}.0) dpi, "
        f"rotation {rot}, state {on}}}",
    ]
    return "\n".join(lines) + "\n", 0


def input_(phone: Phone, args: list[str]) -> tuple[str, int]:
    rot = phone.world.rotation % 4
    pw, ph = phone.spec.screen.width, phone.spec.screen.height
    w, h = _logical_size(phone)
    stack = phone.world.activity_stack()
    focus = phone.world.current_focus()
    viewport = (f"Viewport INTERNAL: displayId=0, uniqueId=local:{DISPLAY_ID}, port=0, "
                f"orientation={rot}, logicalFrame=[0, 0, {w}, {h}], physicalFrame=[0, 0, {w}, "
                f"{h}], deviceSize=[{pw}, {ph}], isActive=[1]")
    lines = [
        "INPUT MANAGER (dumpsys input)",
        "",
        "Input Manager Service (Java) State:",
        "  Pointer Capture Requested: false",
        "",
        "Event Hub State:",
        "  BuiltInKeyboardId: -2",
        "  Devices:",
        "    3: sim_touchscreen",
        "      Classes: TOUCH | TOUCH_MT",
        "      Path: /dev/input/event2",
        "",
        "Input Reader State (Nums of device: 1):",
        "  Device 3: sim_touchscreen",
        "    Generation: 12",
        "    IsExternal: false",
        "    Sources: TOUCHSCREEN",
        "    Touch Input Mapper (mode - DIRECT):",
        "      DeviceMode: DIRECT",
        f"      {viewport}",
        f"      RawSurfaceWidth: {pw}px",
        f"      RawSurfaceHeight: {ph}px",
        f"      SurfaceWidth: {w}px",
        f"      SurfaceHeight: {h}px",
        "      SurfaceLeft: 0",
        "      SurfaceTop: 0",
        f"      SurfaceOrientation: {rot}",
        f"      InputDeviceOrientation: {rot}",
        "  Configuration:",
        "    Viewports:",
        f"      {viewport}",
        "",
        "Input Dispatcher State:",
        "  DispatchEnabled: true",
        "  DispatchFrozen: false",
        "  FocusedApplications:",
    ]
    if stack:
        lines.append(f"    displayId=0, name='{activity_record(stack[0])}', "
                     "dispatchingTimeout=5000ms")
    lines.append("  FocusedWindows:")
    if focus:
        lines.append(f"    displayId=0, name='{window_name(*focus)[7:-1]}'")
    return "\n".join(lines) + "\n", 0


def power(phone: Phone, args: list[str]) -> tuple[str, int]:
    on = bool(phone.world.screen_on)
    b = phone.faults.battery
    level = b.current_level(phone.faults.clock())
    lines = [
        "POWER MANAGER (dumpsys power)",
        "",
        "Power Manager State:",
        "  mDirty=0x0",
        f"  mWakefulness={'Awake' if on else 'Asleep'}",
        "  mWakefulnessChanging=false",
        f"  mIsPowered={str(b.plugged_usb).lower()}",
        f"  mPlugType={2 if b.plugged_usb else 0}",
        f"  mBatteryLevel={level}",
        "  mDockState=0",
        "  mStayOn=false",
        "  mProximityPositive=false",
        f"  mBootCompleted={str(phone.faults.boot_completed()).lower()}",
        "  mSystemReady=true",
        "  mHalAutoSuspendModeEnabled=false",
        "  mHalInteractiveModeEnabled=true",
        f"  mWakeLockSummary=0x{0x3F if on else 0:x}",
        "  mRequestWaitForNegativeProximity=false",
        "  mSandmanScheduled=false",
        f"  mBatteryLevelLow={str(level <= 15).lower()}",
        "  mLightDeviceIdleMode=false",
        "  mDeviceIdleMode=false",
        "  mScreenBrightnessBoostInProgress=false",
        "  mHoldingWakeLockSuspendBlocker=false",
        f"  mHoldingDisplaySuspendBlocker={str(on).lower()}",
        "",
        "Settings and Configuration:",
        "  mScreenOffTimeoutSetting=60000",
        "  mStayOnWhilePluggedInSetting=0",
        "",
        f"Display Power: state={'ON' if on else 'OFF'}",
    ]
    return "\n".join(lines) + "\n", 0


# -- package / misc ------------------------------------------------------------------
def package(phone: Phone, args: list[str]) -> tuple[str, int]:
    names = [a for a in args if not a.startswith("-")]
    pkgs = {p.name: p for p in phone.world.packages()}
    if not names:
        return "".join(f"  Package [{n}] ({ident_hash('pkg', n)}):\n" for n in sorted(pkgs)), 0
    name = names[0]
    info = pkgs.get(name)
    if info is None:
        return f"Unable to find package: {name}\n", 0
    meta = phone.installed.get(name)
    t = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(meta.install_time if meta else
                                                       phone.boot_time - 86400))
    flags = "SYSTEM HAS_CODE ALLOW_CLEAR_USER_DATA" if info.system else \
        "HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP"
    lines = []
    if info.launcher_activity:
        lines += ["Activity Resolver Table:", "  Non-Data Actions:",
                  "      android.intent.action.MAIN:",
                  f"        {ident_hash('act', name)} "
                  f"{short_component(name, info.launcher_activity)} filter "
                  f"{ident_hash('f', name)}",
                  '          Action: "android.intent.action.MAIN"',
                  '          Category: "android.intent.category.LAUNCHER"', ""]
    code_path = info.apk_path.rsplit("/", 1)[0]
    lines += [
        "Packages:",
        f"  Package [{name}] ({ident_hash('pkg', name)}):",
        f"    appId={uid_of(name)}",
        f"    pkg=Package{{{ident_hash('p', name)} {name}}}",
        f"    codePath={code_path}",
        f"    resourcePath={code_path}",
        f"    versionCode={meta.version_code if meta else phone.spec.sdk} minSdk=24 "
        f"targetSdk={phone.spec.sdk}",
        f"    versionName={meta.version_name if meta else phone.spec.release}",
        f"    flags=[ {flags} ]",
        f"    timeStamp={t}",
        f"    firstInstallTime={t}",
        f"    lastUpdateTime={t}",
        f"    signatures=PackageSignatures{{{ident_hash('sig', name)} version:2, "
        f"signatures:[{ident_hash('cert', name)}], past signatures:[]}}",
        f"    pkgFlags=[ {flags} ]",
        "    User 0: ceDataInode=0 installed=true hidden=false suspended=false "
        "stopped=false notLaunched=false enabled=0 instant=false virtual=false",
    ]
    return "\n".join(lines) + "\n", 0


def surfaceflinger(phone: Phone, args: list[str]) -> tuple[str, int]:
    if "--display-id" in args:
        return f'Display {DISPLAY_ID} (HWC display 0): port=0 pnpId=GGL displayName="Built-in Screen"\n', 0  # noqa: E501
    w, h = phone.spec.screen.width, phone.spec.screen.height
    return f"Display {DISPLAY_ID} (HWC display 0)\n  size={w}x{h}\n", 0


def thermal(phone: Phone, args: list[str]) -> tuple[str, int]:
    t = phone.faults.battery.temperature / 10
    status = 0 if t < 45 else (2 if t < 50 else 4)
    lines = [
        "IsStatusOverride: false",
        f"Thermal Status: {status}",
        "Cached temperatures:",
        f"\tTemperature{{mValue={t:.1f}, mType=2, mName=battery, mStatus={status}}}",
        "HAL Ready: true",
        "HAL connection:",
        "\tThermalHAL AIDL 1  connected: yes",
        "Current temperatures from HAL:",
        f"\tTemperature{{mValue={t + 6:.1f}, mType=0, mName=cpu0, mStatus={status}}}",
        f"\tTemperature{{mValue={t:.1f}, mType=2, mName=battery, mStatus={status}}}",
        f"\tTemperature{{mValue={t + 2:.1f}, mType=3, mName=skin, mStatus={status}}}",
        "Current cooling devices from HAL:",
        "\tCoolingDevice{mValue=0, mType=2, mName=cpu0}",
    ]
    return "\n".join(lines) + "\n", 0


def telephony_registry(phone: Phone, args: list[str]) -> tuple[str, int]:
    """Call and service state of the one SIM slot (in service on a test network; off-hook
    while the Phone app's call lasts), as android_world's call-state check parses it."""
    call_state, number = phone.world.call_state()
    lines = [
        "last known state:",
        "  Phone Id=0",
        f"  mCallState={call_state}",
        f"  mRingingCallState={1 if call_state == 1 else 0}",
        f"  mForegroundCallState={1 if call_state == 2 else 0}",
        f"  mCallIncomingNumber={number}",
        "  mServiceState=0(IN_SERVICE) 0(IN_SERVICE) 0 0 T-Mobile T-Mobile 310260 310260 "
        "LTE LTE CSS not supported -1 -1 RoamingType:0 RoamingType:0 Emergency:false",
        "  mVoiceActivationState=0",
        "  mDataActivationState=0",
        "  mUserMobileDataState=true",
        "  mSignalStrength=SignalStrength:{ mCdma=Invalid mGsm=Invalid mWcdma=Invalid "
        "mTdscdma=Invalid mLte=CellSignalStrengthLte: rssi=-51 rsrp=-94 rsrq=-7 rssnr=30 "
        "cqi=2147483647 ta=2147483647 level=4 mNr=Invalid primary=CellSignalStrengthLte}",
        "  mMessageWaiting=false",
        "  mCallForwarding=false",
        "  mDataActivity=0",
        "  mDataConnectionState=2",
        "  mCellIdentity=CellIdentityLte:{ mCi=1 mPci=0 mTac=1 mEarfcn=0 mBands=[] "
        "mBandwidth=2147483647 mMcc=310 mMnc=260 mAlphaLong=T-Mobile mAlphaShort=T-Mobile}",
        "  mSrvccState=-1",
        "  mCallPreciseDisconnectCause=-1",
        "  mCallDisconnectCause=-1",
        "local logs:",
    ]
    return "\n".join(lines) + "\n", 0


Service = Callable[[Phone, list[str]], tuple[str, int]]
SERVICES: dict[str, Service] = {
    "battery": battery,
    "window": window,
    "activity": activity,
    "input_method": input_method,
    "display": display,
    "input": input_,
    "power": power,
    "package": package,
    "SurfaceFlinger": surfaceflinger,
    "thermalservice": thermal,
    "telephony.registry": telephony_registry,
    "notification": lambda phone, args: (
        phone.world.notification_dump(redact="--noredact" not in args), 0),
}


@command("dumpsys")
async def dumpsys(p: Proc) -> int:
    args = list(p.args)
    while args and args[0] in ("-t", "-T", "--pid", "--proto", "--priority"):
        del args[:2]  # options with a value
    if args and args[0] == "-l":
        p.write("Currently running services:\n" +
                "".join(f"  {n}\n" for n in sorted(SERVICES)))
        return 0
    if not args:
        for name in sorted(SERVICES):
            text, _ = SERVICES[name](p.phone, [])
            p.write(f"{SEPARATOR}\nDUMP OF SERVICE {name}:\n{text}")
        return 0
    service = SERVICES.get(args[0])
    if service is None:
        p.error(f"Can't find service: {args[0]}\n")
        return 0
    text, code = service(p.phone, args[1:])
    if text:
        p.write(text)
    return code
